//! The `slotest` binary: runs `suites/` against the embedded mock engine by default.

fn main() -> std::process::ExitCode {
    slotest::main_with_args(std::env::args_os())
}
