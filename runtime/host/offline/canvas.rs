//! The RGB picture `plot` draws into: single pixels, filled rectangles and
//! text in an embedded 8×8 bitmap font (the public-domain font of the
//! `font8x8` crate), scaled by a whole number so every glyph stays crisp.
//!
//! Nothing here reads a system font or anything else outside the program,
//! so the same drawing gives the same bytes on every machine. Pixels drawn
//! outside the picture are dropped.

use font8x8::{UnicodeFonts, BASIC_FONTS, LATIN_FONTS};

/// The side of one glyph cell of the font, in unscaled pixels.
pub const GLYPH: u32 = 8;

/// An RGB colour.
pub type Rgb = [u8; 3];

/// An RGB8 picture, row by row, top to bottom.
pub struct Canvas {
    width: u32,
    height: u32,
    rgb: Vec<u8>,
}

impl Canvas {
    /// A `width` × `height` picture filled with `background`.
    pub fn new(width: u32, height: u32, background: Rgb) -> Canvas {
        let rgb = background.repeat(width as usize * height as usize);
        Canvas { width, height, rgb }
    }

    /// The picture's width and height, in pixels.
    pub fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    /// The pixels, RGB8, row by row.
    pub fn rgb(&self) -> &[u8] {
        &self.rgb
    }

    /// Sets pixel (`x`, `y`); nothing when it is outside the picture.
    pub fn set(&mut self, x: i64, y: i64, colour: Rgb) {
        if x < 0 || y < 0 || x >= self.width as i64 || y >= self.height as i64 {
            return;
        }
        let i = (y as usize * self.width as usize + x as usize) * 3;
        self.rgb[i..i + 3].copy_from_slice(&colour);
    }

    /// Fills the `w` × `h` rectangle whose top-left corner is (`x`, `y`).
    pub fn fill(&mut self, x: i64, y: i64, w: u32, h: u32, colour: Rgb) {
        for yy in y..y + h as i64 {
            for xx in x..x + w as i64 {
                self.set(xx, yy, colour);
            }
        }
    }

    /// Draws `text` with its top-left corner at (`x`, `y`), each font pixel
    /// `scale` × `scale` pixels; only the glyphs' set pixels are drawn.
    pub fn text(&mut self, x: i64, y: i64, text: &str, scale: u32, colour: Rgb) {
        let s = scale as i64;
        for (i, c) in text.chars().enumerate() {
            let left = x + i as i64 * GLYPH as i64 * s;
            for (row, bits) in glyph(c).iter().enumerate() {
                for col in 0..GLYPH as i64 {
                    if bits >> col & 1 == 1 {
                        self.fill(left + col * s, y + row as i64 * s, scale, scale, colour);
                    }
                }
            }
        }
    }
}

/// The width of `text` drawn at `scale`, in pixels (one cell a character).
pub fn text_width(text: &str, scale: u32) -> u32 {
    text.chars().count() as u32 * GLYPH * scale
}

/// The rows of `c`'s glyph, top first; bit 0 of a row is its leftmost
/// pixel. Characters the font lacks (beyond Latin-1) are drawn as `?`.
pub fn glyph(c: char) -> [u8; 8] {
    BASIC_FONTS
        .get(c)
        .or_else(|| LATIN_FONTS.get(c))
        .or_else(|| BASIC_FONTS.get('?'))
        .unwrap_or([0; 8])
}

/// `text` cut to at most `max_px` pixels at `scale`, ending in `...` when
/// it was cut.
pub fn fit(text: &str, max_px: u32, scale: u32) -> String {
    let cells = (max_px / (GLYPH * scale)) as usize;
    if text.chars().count() <= cells {
        return text.to_string();
    }
    let keep = cells.saturating_sub(3);
    let mut cut: String = text.chars().take(keep).collect();
    cut.push_str(&"..."[..cells.min(3)]);
    cut
}
