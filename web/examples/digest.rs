//! Prints the parity suite's digest of the CPU reference's answers on this (native) build:
//! the page's run in the browser must give the same (`scripts/web.sh test` compares them).
//!
//! ```text
//! cargo run --release -p voxcast-web --example digest
//! ```

use voxcast_testkit::scene::Terrain;

fn main() {
    let terrain = Terrain::STANDARD.build();
    match pollster::block_on(voxcast_web::suite::run(None, &terrain)) {
        Ok(report) => println!(
            "{:016x} {:016x} {}",
            report.cpu_digest, report.inputs_digest, report.answers
        ),
        Err(e) => {
            eprintln!("digest: {e}");
            std::process::exit(1);
        }
    }
}
