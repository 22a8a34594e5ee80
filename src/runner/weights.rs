//! The served model's weight files on this host, for the roofline when the suite gives no
//! `params`: the model the `[server]` command names (`vllm serve /models/x`, `llama-server -m
//! x.gguf`), else the id the engine serves (vLLM and llama.cpp serve a local model under its
//! path), else a Hugging Face cache snapshot of a hub id. Runner glue: it reads the disk.

use crate::load::TargetInfo;
use crate::plan::Case;
use std::path::{Path, PathBuf};

/// Weight files by kind, the first kind a folder has wins (a folder with safetensors may also
/// keep the original `.bin` or `.pt` files).
const KINDS: &[&str] = &["safetensors", "gguf", "bin", "pt"];

/// Bytes of the served model's weights, where they can be found; `None` for a hub id that is
/// not in the local cache, a model shape without weights (`--load-format dummy`), or a
/// remote server's path that this host does not have.
pub(super) fn on_disk(case: &Case, info: &TargetInfo) -> Option<f64> {
    let engine = info.engine.and_then(crate::engine::Served::engine);
    let named =
        engine.zip(case.server.as_ref()).and_then(|(e, s)| crate::engine::model_arg(e, &s.resolved()));
    [named, Some(info.model.clone())].into_iter().flatten().find_map(|m| bytes_of(&m))
}

fn bytes_of(model: &str) -> Option<f64> {
    let path = Path::new(model);
    let meta = std::fs::metadata(path).ok();
    let bytes = match meta {
        Some(m) if m.is_file() => KINDS.iter().any(|k| model.ends_with(&format!(".{k}"))).then_some(m.len()),
        Some(m) if m.is_dir() => in_folder(path),
        _ => hub_snapshot(model).and_then(|dir| in_folder(&dir)),
    }?;
    (bytes > 0).then_some(bytes as f64)
}

/// The weight files directly in `dir`, of the first kind it has.
fn in_folder(dir: &Path) -> Option<u64> {
    let files: Vec<(String, u64)> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|e| {
            Some((e.file_name().to_string_lossy().into_owned(), std::fs::metadata(e.path()).ok()?))
        })
        .filter(|(_, m)| m.is_file())
        .map(|(name, m)| (name, m.len()))
        .collect();
    KINDS.iter().find_map(|k| {
        let sum: u64 = files.iter().filter(|(n, _)| n.ends_with(&format!(".{k}"))).map(|(_, b)| b).sum();
        (sum > 0).then_some(sum)
    })
}

/// `org/name` in the Hugging Face cache: `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else
/// `~/.cache/huggingface/hub`, `models--org--name/snapshots/<revision>/`.
fn hub_snapshot(id: &str) -> Option<PathBuf> {
    let (org, name) = id.split_once('/')?;
    if name.contains('/') || id.starts_with('/') || id.starts_with('.') {
        return None;
    }
    let hub = std::env::var_os("HF_HUB_CACHE").map(PathBuf::from).or_else(|| {
        std::env::var_os("HF_HOME")
            .map(|h| PathBuf::from(h).join("hub"))
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/huggingface/hub")))
    })?;
    let snapshots = hub.join(format!("models--{org}--{name}")).join("snapshots");
    std::fs::read_dir(snapshots).ok()?.flatten().map(|e| e.path()).find(|p| in_folder(p).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Engine;

    #[test]
    fn a_file_a_folder_and_a_hub_snapshot_give_their_weights() {
        let dir = std::env::temp_dir().join(format!("slotest-weights-{}", std::process::id()));
        let model = dir.join("llama");
        std::fs::create_dir_all(&model).expect("dir");
        std::fs::write(model.join("model-00001-of-00002.safetensors"), vec![0u8; 3000]).expect("write");
        std::fs::write(model.join("model-00002-of-00002.safetensors"), vec![0u8; 1000]).expect("write");
        std::fs::write(model.join("pytorch_model.bin"), vec![0u8; 9999]).expect("write");
        std::fs::write(model.join("config.json"), "{}").expect("write");
        assert_eq!(bytes_of(&model.to_string_lossy()), Some(4000.0), "safetensors first, not the .bin");
        let gguf = dir.join("gemma.gguf");
        std::fs::write(&gguf, vec![0u8; 2500]).expect("write");
        assert_eq!(bytes_of(&gguf.to_string_lossy()), Some(2500.0));
        assert_eq!(bytes_of(&model.join("config.json").to_string_lossy()), None, "not a weight file");
        // A shape without weights (config and tokenizer only), and a hub id nowhere here.
        let shape = dir.join("shape");
        std::fs::create_dir_all(&shape).expect("dir");
        std::fs::write(shape.join("config.json"), "{}").expect("write");
        assert_eq!(bytes_of(&shape.to_string_lossy()), None);
        assert_eq!(hub_snapshot("/abs/path"), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn each_engines_command_names_its_model() {
        let at = |e: Engine, c: &str| crate::engine::model_arg(e, c);
        assert_eq!(
            at(Engine::Vllm, "/opt/bin/vllm serve /models/llama --port 8000").as_deref(),
            Some("/models/llama")
        );
        assert_eq!(at(Engine::Vllm, "vllm serve --model m --port 1").as_deref(), Some("m"));
        assert_eq!(
            at(Engine::Llamacpp, "llama-server -m \"/m/gemma.gguf\" -np 2").as_deref(),
            Some("/m/gemma.gguf")
        );
        assert_eq!(at(Engine::Llamacpp, "llama-server --model=/m/g.gguf").as_deref(), Some("/m/g.gguf"));
        assert_eq!(
            at(Engine::Sglang, "python -m sglang.launch_server --model-path q --port 1").as_deref(),
            Some("q")
        );
        assert_eq!(at(Engine::Openai, "anything serve x"), None);
    }
}
