//! `scripts/llamacpp.sh` as users call it, run as a real child process with a scratch cache:
//! the CUDA build is cached apart from the CPU one, `env --cuda` exports what
//! `suites/llamacpp-gpu.toml` reads, and without a CUDA compiler `build --cuda` stops at once
//! with a message instead of compiling a CPU server under the CUDA name. Nothing is built or
//! fetched here.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn script(cache: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new("bash");
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/llamacpp.sh"))
        .args(args)
        .env("SLOTEST_CACHE", cache)
        .env_remove("CUDA_ARCH");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().expect("bash runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `paths [--cuda]`: the binary, then the model.
fn paths(cache: &Path, args: &[&str], envs: &[(&str, &str)]) -> (PathBuf, PathBuf) {
    let out = script(cache, args, envs);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let mut lines = stdout.lines();
    let bin = PathBuf::from(lines.next().expect("binary path"));
    let model = PathBuf::from(lines.next().expect("model path"));
    (bin, model)
}

#[test]
fn the_cuda_build_is_cached_apart_and_env_cuda_exports_the_gpu_suites_variables() {
    let cache = support::scratch("llamacpp_script", "paths");
    let (cpu, model) = paths(&cache, &["paths"], &[]);
    let (cuda, cuda_model) = paths(&cache, &["paths", "--cuda"], &[]);
    let (ada, _) = paths(&cache, &["paths", "--cuda"], &[("CUDA_ARCH", "89")]);
    assert_ne!(cpu, cuda, "the CUDA build must not overwrite the CPU one");
    assert_eq!(model, cuda_model, "one model for both");
    assert!(cuda.to_string_lossy().contains("-cuda-sm90-"), "Hopper by default: {}", cuda.display());
    assert!(ada.to_string_lossy().contains("-cuda-sm89-"), "CUDA_ARCH picks the cache: {}", ada.display());
    assert!(cpu.starts_with(&cache) && cuda.starts_with(&cache));

    // Not built yet: `env --cuda` says how to build, and exports nothing.
    let out = script(&cache, &["env", "--cuda"], &[]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("build --cuda"), "{}", text(&out.stderr));
    assert!(text(&out.stdout).is_empty());

    // Built (a stand-in binary and model): the GPU suite's variable, and the CPU one untouched.
    for file in [&cuda, &model] {
        std::fs::create_dir_all(file.parent().expect("parent")).expect("dir");
        std::fs::write(file, "#!/bin/sh\n").expect("write");
    }
    let mut perms = std::fs::metadata(&cuda).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&cuda, perms).expect("chmod");
    let out = script(&cache, &["env", "--cuda"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let env = text(&out.stdout);
    assert!(env.contains(&format!("export SLOTEST_LLAMA_SERVER_CUDA={}", cuda.display())), "{env}");
    assert!(env.contains(&format!("export SLOTEST_GEMMA_GGUF={}", model.display())), "{env}");
    assert!(!env.contains("SLOTEST_LLAMA_SERVER="), "the CPU variable is not redirected: {env}");
    // The CPU build is still missing, and `env` says so.
    assert!(!script(&cache, &["env"], &[]).status.success());
}

#[test]
fn build_cuda_without_a_cuda_compiler_stops_before_fetching_anything() {
    if Path::new("/usr/local/cuda/bin/nvcc").exists() || Path::new("/usr/bin/nvcc").exists() {
        eprintln!("SKIPPED: this machine has a CUDA compiler");
        return;
    }
    let cache = support::scratch("llamacpp_script", "no_nvcc");
    // No network is needed for the answer: a source package that does not exist would fail
    // later, so stopping here proves the check comes first.
    let out = script(
        &cache,
        &["build", "--cuda"],
        &[("PATH", "/usr/bin:/bin"), ("LLAMA_CPP_SRC", "/nonexistent/src.tar.gz")],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--cuda needs the CUDA toolkit (nvcc)"), "{stderr}");
    assert!(stderr.contains("suites/llamacpp-cpu.toml"), "names the CPU fallback: {stderr}");
    let left: Vec<_> = std::fs::read_dir(&cache).expect("cache").flatten().map(|e| e.file_name()).collect();
    assert!(left.is_empty(), "nothing built, fetched or installed: {left:?}");
}

#[test]
fn the_gpu_suite_is_ignored_until_its_variables_are_set() {
    let dir = support::scratch("llamacpp_script", "gpu_suite");
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("suites/llamacpp-gpu.toml");
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_slotest"))
            .arg("--suite")
            .arg(&suite)
            .arg("--results")
            .arg(&dir)
            .args(extra)
            .env_remove("SLOTEST_LLAMA_SERVER_CUDA")
            .env_remove("SLOTEST_GEMMA_GGUF")
            .env_remove("SLOTEST_TARGET")
            .output()
            .expect("slotest runs")
    };
    let out = run(&[]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("7 cases: 0 pass, 0 fail, 0 inconclusive, 7 ignored"), "{stdout}");
    // Asked for anyway, a row says what it needs instead of starting a server it cannot.
    let out = run(&["--include-ignored", "--exact", "llamacpp_gpu::one_user"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(101), "a failed case: {stdout}");
    assert!(
        stdout.contains("set SLOTEST_LLAMA_SERVER_CUDA, SLOTEST_GEMMA_GGUF (its [server] command uses them)"),
        "{stdout}"
    );
}
