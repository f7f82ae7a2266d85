//! A real-time loop with `morphrt-core` alone: an audio thread calls the
//! processor with odd frame counts, as hosts do, paced like a device,
//! while the controller on the main thread switches the profile from
//! strict to repro mid-stream (the state carries over: the tone's phase
//! goes on) and drops the engines the processor retires.
//!
//! ```sh
//! cargo run --release --example realtime -- scenes/drone.json 2
//! ```

use morphrt_core::api::{Activation, Notice};
use morphrt_core::profile::Profile;
use std::time::{Duration, Instant};

/// What the loop played: the output (one `Vec` per main-bus channel),
/// the processor's latency, and the switch's capture sample, swap sample
/// and crossfade.
pub struct Played {
    /// The output, channel by channel.
    pub output: Vec<Vec<f32>>,
    /// Frames between input and output.
    pub latency: usize,
    /// The switch: capture sample N, swap sample S, crossfade frames.
    pub switch: (u64, u64, u64),
}

/// Plays the scene in `text` for `seconds` at 48 kHz, starting under
/// strict and switching to repro after a quarter of it.
pub fn play(text: &str, seconds: f64) -> Result<Played, String> {
    let rate = 48_000;
    let sizes = [97usize, 1, 251, 33, 480, 7];
    let max = *sizes.iter().max().expect("sizes");
    let (mut controller, mut processor) = Activation::new(rate, max)
        .profile(Profile::Strict)
        .activate_scene(text, "scene.json")
        .map_err(|e| e.to_string())?;
    let latency = processor.latency();
    let frames = (seconds * rate as f64) as usize;
    let channels = processor.output_channels();
    let inputs = vec![vec![0.0f32; max]; processor.input_channels()];
    // The audio thread: everything it needs is allocated before it starts.
    let audio = std::thread::spawn(move || {
        let mut output = vec![vec![0.0f32; frames]; channels];
        let start = Instant::now();
        let (mut done, mut k) = (0, 0);
        while done < frames {
            let n = sizes[k % sizes.len()].min(frames - done);
            k += 1;
            let ins: Vec<&[f32]> = inputs.iter().map(|c| &c[..n]).collect();
            let mut outs: Vec<&mut [f32]> =
                output.iter_mut().map(|c| &mut c[done..done + n]).collect();
            processor
                .process(&ins, &mut outs, &[], n)
                .expect("the buffers fit the activation");
            done += n;
            // Paced like a device: no faster than the sample rate.
            let due = Duration::from_secs_f64(done as f64 / rate as f64);
            if let Some(wait) = due.checked_sub(start.elapsed()) {
                std::thread::sleep(wait);
            }
        }
        output
    });
    std::thread::sleep(Duration::from_secs_f64(seconds / 4.0));
    controller
        .set_profile(Profile::Repro)
        .map_err(|e| e.to_string())?;
    let mut switch = None;
    while !audio.is_finished() {
        for notice in controller.poll() {
            if let Notice::Swapped {
                saved_at,
                swap_at,
                fade,
                ..
            } = notice
            {
                switch = Some((saved_at, swap_at, fade));
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let output = audio.join().map_err(|_| "the audio thread panicked")?;
    let switch = switch.ok_or("the switch did not happen before the end")?;
    Ok(Played {
        output,
        latency,
        switch,
    })
}

#[allow(dead_code)] // a test includes this file for `play` alone
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [scene, seconds] = &args[..] else {
        eprintln!("usage: realtime SCENE SECONDS");
        std::process::exit(2);
    };
    let result = std::fs::read_to_string(scene)
        .map_err(|e| format!("cannot read `{scene}`: {e}"))
        .and_then(|text| {
            let seconds: f64 = seconds
                .parse()
                .map_err(|_| format!("`{seconds}` is not a number of seconds"))?;
            play(&text, seconds)
        });
    match result {
        Ok(p) => {
            let (n, s, fade) = p.switch;
            let peak = p
                .output
                .iter()
                .flatten()
                .fold(0.0f32, |m, x| m.max(x.abs()));
            println!(
                "played {} frames (latency {}); strict → repro captured at {n}, swapped at {s} with a {fade}-frame crossfade; peak {peak:.3}",
                p.output[0].len(),
                p.latency
            );
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
