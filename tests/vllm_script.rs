//! `scripts/vllm.sh` as users call it, a real child process with a scratch cache, on a machine
//! without a GPU: a model shape's folder (config plus a tokenizer the repo builds) gives every
//! prompt word its own id, the offline install takes a directory of wheels with no index, and
//! the launchers it writes run `vllm serve` with random weights from the local folder. The
//! real vLLM on a GPU is docs/vllm.md's run. Slow tier: it needs python3 and PyPI's
//! `tokenizers` (a venv in the scratch cache).

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn script(cache: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new("bash");
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/vllm.sh"))
        .args(args)
        .env("SLOTEST_CACHE", cache)
        .env_remove("VLLM_WHEELS")
        .env_remove("VLLM_SITE")
        .env_remove("VLLM_VERSION")
        .env_remove("VLLM_MODEL");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().expect("bash runs")
}

fn ok(out: Output) -> String {
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Checks a shape's tokenizer with the `tokenizers` package the script installed: its size, its
/// BOS, one id per prompt word, and that text comes back as it went in.
fn check_tokenizer(cache: &Path, folder: &Path, vocab: usize, bos: Option<u32>) {
    let words =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/load/workload/prompter.rs"))
            .expect("workload source");
    let start = words.find("pub const WORDS").expect("WORDS");
    let list: Vec<&str> =
        words[start..words[start..].find("];").expect("end") + start].split('"').skip(1).step_by(2).collect();
    assert!(list.len() > 50, "{list:?}");
    let program = "import json, sys\nfrom tokenizers import Tokenizer\nt = Tokenizer.from_file(sys.argv[1])\n\
         words = json.loads(sys.argv[2])\nids = [t.token_to_id(w) for w in words]\n\
         text = ' '.join(words)\nenc = t.encode(text).ids\n\
         print(json.dumps({'size': t.get_vocab_size(), 'ids': ids, 'first': enc[0], 'n': len(enc),\n\
         'back': t.decode(enc, skip_special_tokens=True)}))\n";
    let out = Command::new(cache.join("shape-tools/bin/python"))
        .args(["-c", program])
        .arg(folder.join("tokenizer.json"))
        .arg(serde_json::to_string(&list).expect("json"))
        .output()
        .expect("python runs");
    let got: serde_json::Value = serde_json::from_str(&ok(out)).expect("json");
    assert_eq!(got["size"], vocab);
    let ids: Vec<u64> =
        got["ids"].as_array().expect("ids").iter().map(|i| i.as_u64().expect("an id")).collect();
    let distinct: std::collections::HashSet<u64> = ids.iter().copied().collect();
    assert_eq!(distinct.len(), list.len(), "every prompt word its own id (none [UNK])");
    assert!(!ids.contains(&0), "no prompt word is [UNK]");
    let with_bos = usize::from(bos.is_some());
    assert_eq!(
        got["n"],
        list.len() + with_bos,
        "one token a word{}",
        if bos.is_some() { ", plus BOS" } else { "" }
    );
    if let Some(bos) = bos {
        assert_eq!(got["first"], bos);
    }
    assert_eq!(got["back"], list.join(" "), "decodes to the words it encoded");
}

/// A stand-in `vllm` wheel: its CLI prints the arguments it was run with and whether the hub
/// is off, the way the launchers call it.
fn fake_wheel(dir: &Path, version: &str) {
    std::fs::create_dir_all(dir).expect("dir");
    let program = format!(
        "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1], 'w')\n\
         z.writestr('vllm/__init__.py', '__version__ = \"{version}\"\\n')\n\
         z.writestr('vllm/entrypoints/__init__.py', '')\nz.writestr('vllm/entrypoints/cli/__init__.py', '')\n\
         z.writestr('vllm/entrypoints/cli/main.py', 'import os, sys\\nprint(\"argv\", \" \".join(sys.argv[1:]))\\nprint(\"hub offline\", os.environ.get(\"HF_HUB_OFFLINE\"))\\n')\n\
         d = 'vllm-{version}.dist-info/'\n\
         z.writestr(d + 'METADATA', 'Metadata-Version: 2.1\\nName: vllm\\nVersion: {version}\\n')\n\
         z.writestr(d + 'WHEEL', 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')\n\
         z.writestr(d + 'RECORD', '')\nz.close()\n"
    );
    let wheel = dir.join(format!("vllm-{version}-py3-none-any.whl"));
    let out = Command::new("python3").args(["-c", &program]).arg(&wheel).output().expect("python3 runs");
    ok(out);
}

#[test]
#[ignore = "slow tier: python3 and PyPI's tokenizers"]
fn shapes_install_offline_and_launch_with_random_weights() {
    let _slow = crate::support::slow("shapes_install_offline_and_launch_with_random_weights");
    let cache = support::scratch("vllm_script", "all");
    // Not installed: `env` and `serve` say how, and export nothing.
    let out = script(&cache, &["env", "--dummy", "llama-3.1-8b"], &[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("scripts/vllm.sh install"));
    assert!(out.stdout.is_empty());

    // Offline from a directory of wheels: the version asked for, or a clear no.
    let wheels = cache.join("wheels");
    fake_wheel(&wheels, "0.26.0");
    let w = wheels.to_string_lossy().into_owned();
    let out = script(&cache, &["install"], &[("VLLM_WHEELS", &w), ("VLLM_VERSION", "0.25.1")]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds no vllm-0.25.1 wheel"));
    let said =
        ok(script(&cache, &["install"], &[("VLLM_WHEELS", &w), ("PIP_INDEX_URL", "http://127.0.0.1:9/")]));
    assert!(said.is_empty());
    assert_eq!(ok(script(&cache, &["versions"], &[])).trim(), "0.26.0");
    // Or from packages already unpacked elsewhere (`pip install --target`, carried as xz):
    // moved into place, checked as a wheel install is.
    fake_wheel(&cache.join("w25"), "0.25.1");
    let site = cache.join("site-0.25.1");
    let unzip = "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])";
    let whl = cache.join("w25/vllm-0.25.1-py3-none-any.whl");
    ok(Command::new("python3").args(["-c", unzip]).arg(&whl).arg(&site).output().expect("python3 runs"));
    let s = site.to_string_lossy().into_owned();
    let out = script(&cache, &["install"], &[("VLLM_SITE", &s), ("VLLM_VERSION", "0.24.0")]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds no vllm-0.24.0.dist-info"), "{out:?}");
    ok(script(&cache, &["install"], &[("VLLM_SITE", &s), ("VLLM_VERSION", "0.25.1")]));
    assert!(!site.exists(), "moved, not copied");
    assert_eq!(
        ok(script(&cache, &["versions"], &[])).split_whitespace().collect::<Vec<_>>(),
        ["0.25.1", "0.26.0"]
    );

    // The shape and the exports the vLLM suites read.
    let exports = ok(script(&cache, &["env", "--dummy", "llama-3.1-8b"], &[]));
    let get = |name: &str| {
        exports
            .lines()
            .find_map(|l| l.strip_prefix(&format!("export {name}=")))
            .map(PathBuf::from)
            .unwrap_or_else(|| panic!("{name} in {exports}"))
    };
    let (bin, model) = (get("VLLM_BIN"), get("VLLM_MODEL"));
    assert!(bin.ends_with("vllm-0.26.0/bin/vllm-dummy"), "{}", bin.display());
    assert!(model.ends_with("shapes/llama-3.1-8b"), "{}", model.display());
    let config: serde_json::Value = support::json(&model.join("config.json"));
    assert_eq!(config["num_hidden_layers"], 32);
    check_tokenizer(&cache, &model, 128_256, Some(128_000));
    let qwen = PathBuf::from(ok(script(&cache, &["shape", "qwen3-30b-a3b"], &[])).trim());
    check_tokenizer(&cache, &qwen, 151_936, None);
    // A vision-language shape: its image processor's settings come along (how pixels become
    // tokens: 14-pixel patches merged 2 × 2), and its chat template puts an image's placeholder
    // between the vision markers, which are special tokens at the config's ids.
    let vl = PathBuf::from(ok(script(&cache, &["shape", "qwen2.5-vl-7b"], &[])).trim());
    check_tokenizer(&cache, &vl, 152_064, None);
    let pre: serde_json::Value = support::json(&vl.join("preprocessor_config.json"));
    assert_eq!((pre["patch_size"].as_u64(), pre["merge_size"].as_u64()), (Some(14), Some(2)), "{pre}");
    let config: serde_json::Value = support::json(&vl.join("config.json"));
    let template =
        support::json(&vl.join("tokenizer_config.json"))["chat_template"].as_str().map(str::to_string);
    assert!(
        template.is_some_and(|t| t.contains("<|vision_start|><|image_pad|><|vision_end|>")),
        "the model's own template"
    );
    let tokenizer: serde_json::Value = support::json(&vl.join("tokenizer.json"));
    let added = tokenizer["added_tokens"].as_array().expect("added tokens");
    let id_of = |t: &str| added.iter().find(|a| a["content"] == t).and_then(|a| a["id"].as_u64());
    assert_eq!(id_of("<|image_pad|>"), config["image_token_id"].as_u64());
    assert_eq!(id_of("<|vision_start|>"), config["vision_start_token_id"].as_u64());

    // The launcher: random weights, the hub off, the suite's own flags kept; the plain one adds
    // nothing.
    let run = |bin: &Path| {
        let out = Command::new(bin)
            .args(["serve", &model.to_string_lossy(), "--port", "8123", "--max-num-seqs", "8"])
            .env_remove("HF_HUB_OFFLINE")
            .output()
            .expect("launcher runs");
        ok(out)
    };
    let dummy = run(&bin);
    assert!(dummy.contains("--max-num-seqs 8 --load-format dummy"), "{dummy}");
    assert!(dummy.contains("hub offline 1"), "{dummy}");
    let plain = run(&bin.with_file_name("vllm"));
    assert!(!plain.contains("dummy") && plain.contains("--port 8123"), "{plain}");

    // `check` against an OpenAI-compatible server speaking vLLM's routes (the mock engine).
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port();
    let mut mock = Command::new(env!("CARGO_BIN_EXE_slotest"))
        .args(["mock-server", "--port", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("mock server");
    let url = format!("http://127.0.0.1:{port}");
    let mut said = String::new();
    for _ in 0..50 {
        let out = script(&cache, &["check", &url], &[]);
        said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        if out.status.success() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = mock.kill();
    let _ = mock.wait();
    assert!(said.contains("\"completion_tokens\":8") && said.contains("vllm:* families"), "{said}");
    let _ = std::fs::remove_dir_all(&cache);
}

/// `scripts/vllm/upgrade-quick.toml`, the GPU upgrade gate's quick twin (docs/vllm.md), is the
/// shipped suite's short_chat and long_prefill with fewer requests a block: the same target,
/// lengths, users and SLOs, so a quick gate measures what the nightly one does.
#[test]
fn the_quick_upgrade_suite_is_the_shipped_rows_with_fewer_requests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |p: &str| -> toml::Table { std::fs::read_to_string(root.join(p)).expect(p).parse().expect(p) };
    let (quick, shipped) = (read("scripts/vllm/upgrade-quick.toml"), read("suites/vllm-8b-h100.toml"));
    let table = |t: &toml::Table, k: &str| t[k].as_table().expect(k).clone();
    let mut shipped_target = table(&shipped, "target");
    shipped_target.remove("bandwidth");
    assert_eq!(table(&quick, "target"), shipped_target, "the same target, model and roofline inputs");
    let row = |t: &toml::Table, name: &str| {
        let defaults = table(t, "defaults");
        let rows = t["row"].as_array().expect("rows");
        let mut r = defaults.clone();
        let own = rows.iter().find(|r| r["name"].as_str() == Some(name)).expect(name).as_table().expect(name);
        r.extend(own.clone());
        r.remove("measure");
        r.remove("description");
        r
    };
    for name in ["short_chat", "long_prefill"] {
        assert_eq!(row(&quick, name), row(&shipped, name), "{name}: only the request count may differ");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
        .args(["--suite", "scripts/vllm/upgrade-quick.toml", "--list"])
        .current_dir(root)
        .output()
        .expect("slotest --list");
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{listed}");
    assert_eq!(listed.lines().count(), 2, "{listed}");
}

/// The suites prepared for #54's GPU part plan as written (the tools file read, the images
/// drawn, the `[server]` command whole) and, without `VLLM_BIN`, list their rows as ignored
/// rather than failing: a session lent a GPU runs them as they are.
#[test]
fn the_prepared_vllm_suites_plan_and_wait_for_a_gpu() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (suite, rows) in [("scripts/vllm/services-vl.toml", 4), ("scripts/vllm/ngram.toml", 1)] {
        let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
            .args(["--suite", suite, "--list"])
            .current_dir(root)
            .env_remove("VLLM_BIN")
            .output()
            .expect("slotest --list");
        let listed = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{suite}: {listed}{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(listed.lines().count(), rows, "{suite}: {listed}");
        let dir = support::scratch("vllm_script", suite.rsplit('/').next().expect("name"));
        let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
            .args(["--suite", suite, "--no-baseline", "--results"])
            .arg(&dir)
            .current_dir(root)
            .env_remove("VLLM_BIN")
            .output()
            .expect("slotest");
        let text = support::text(&out);
        assert_eq!(out.status.code(), Some(0), "{text}");
        assert!(text.contains(&format!("{rows} ignored")), "{text}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
