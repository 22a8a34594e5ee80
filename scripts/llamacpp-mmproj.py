"""A vision projector (mmproj) for the CI model, so that llama-server takes images on a CPU
(scripts/llamacpp.sh mmproj): Gemma 3's image rule with random weights.

    python llamacpp-mmproj.py MODEL.gguf OUT.gguf

Gemma 3's vision side as llama.cpp reads it (projector `gemma3`, a SigLIP encoder): an image is
resized to 896 x 896, cut into 14-pixel patches (64 x 64), encoded, pooled 4 x 4 and projected
to the text model's width (read from MODEL.gguf), so every image is 256 tokens between `<start_of_image>` and
`<end_of_image>`, as the real model's are. The weights are random (seeded: the same file each
time), like vLLM's `--load-format dummy`: what the engine counts and schedules is real, what the
model answers about the image is not. The encoder is narrowed (2 blocks of width 128, against
Gemma 3's 27 of 1152), so that an image encodes in a fraction of a second on two cores: image
tokens are the real rule, encode time is not Gemma 3's. Needs the `gguf` package from PyPI.
"""

import sys

import gguf
import numpy as np

IMAGE, PATCH, POOL = 896, 14, 4
WIDTH, FFN, BLOCKS, HEADS = 128, 512, 2, 4


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[3].strip())
    model, out = gguf.GGUFReader(sys.argv[1]), sys.argv[2]
    arch = model.fields["general.architecture"].contents()
    text_embd = model.fields[f"{arch}.embedding_length"].contents()
    rng = np.random.default_rng(270)

    def weight(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    def ones(n: int) -> np.ndarray:
        return np.ones(n, dtype=np.float32)

    def zeros(n: int) -> np.ndarray:
        return np.zeros(n, dtype=np.float32)

    w = gguf.GGUFWriter(out, arch="clip")
    w.add_string("general.name", "gemma-3 vision shape, random weights (slotest CI)")
    w.add_string("clip.projector_type", "gemma3")
    w.add_bool("clip.has_vision_encoder", True)
    w.add_bool("clip.use_gelu", True)
    w.add_uint32("clip.vision.image_size", IMAGE)
    w.add_uint32("clip.vision.patch_size", PATCH)
    w.add_uint32("clip.vision.embedding_length", WIDTH)
    w.add_uint32("clip.vision.feed_forward_length", FFN)
    w.add_uint32("clip.vision.block_count", BLOCKS)
    w.add_uint32("clip.vision.attention.head_count", HEADS)
    w.add_uint32("clip.vision.projection_dim", text_embd)
    w.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-6)
    w.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5])
    w.add_array("clip.vision.image_std", [0.5, 0.5, 0.5])
    w.add_uint32("clip.vision.projector.scale_factor", POOL)

    # numpy shapes are ggml's reversed: a (out, in) matrix is ggml's [in, out].
    w.add_tensor("v.patch_embd.weight", weight(WIDTH, 3, PATCH, PATCH))
    w.add_tensor("v.patch_embd.bias", zeros(WIDTH))
    w.add_tensor("v.position_embd.weight", weight((IMAGE // PATCH) ** 2, WIDTH))
    for i in range(BLOCKS):
        for name in ("attn_q", "attn_k", "attn_v", "attn_out"):
            w.add_tensor(f"v.blk.{i}.{name}.weight", weight(WIDTH, WIDTH))
            w.add_tensor(f"v.blk.{i}.{name}.bias", zeros(WIDTH))
        for name in ("ln1", "ln2"):
            w.add_tensor(f"v.blk.{i}.{name}.weight", ones(WIDTH))
            w.add_tensor(f"v.blk.{i}.{name}.bias", zeros(WIDTH))
        w.add_tensor(f"v.blk.{i}.ffn_up.weight", weight(FFN, WIDTH))
        w.add_tensor(f"v.blk.{i}.ffn_up.bias", zeros(FFN))
        w.add_tensor(f"v.blk.{i}.ffn_down.weight", weight(WIDTH, FFN))
        w.add_tensor(f"v.blk.{i}.ffn_down.bias", zeros(WIDTH))
    w.add_tensor("v.post_ln.weight", ones(WIDTH))
    w.add_tensor("v.post_ln.bias", zeros(WIDTH))
    w.add_tensor("mm.soft_emb_norm.weight", ones(WIDTH))
    # Gemma 3's input projection is stored (vision width, text width), used transposed.
    w.add_tensor("mm.input_projection.weight", weight(WIDTH, text_embd))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    tokens = (IMAGE // PATCH // POOL) ** 2
    print(f"{out}: {IMAGE} px images, {tokens} tokens each, projected to {text_embd}")


if __name__ == "__main__":
    main()
