// tests/slo.rs — runs ./suites as tests: cargo test --test slo [-- FILTER --include-ignored]
fn main() -> std::process::ExitCode {
    slotest::main_with_args(std::env::args_os())
}
