"""A draft model for llama.cpp's speculative decoding that disagrees with its target: the CI
model's first N transformer blocks, written as a GGUF of its own (scripts/llamacpp.sh draft).

    python llamacpp-draft.py MODEL.gguf N OUT.gguf

The draft keeps the model's vocabulary, embeddings, final norm and the blocks 0..N-1 exactly
as they are (quantized bytes copied, not re-quantized), and says it has N blocks. llama.cpp
accepts it as a draft (same vocabulary), and it proposes what a shallower network predicts: it
agrees with the full model less often the fewer blocks it keeps. This is layer-skipping
self-speculation (the draft of LayerSkip and Draft & Verify), not a separately trained model.
Needs the `gguf` package from PyPI.
"""

import re
import sys

import gguf


def main() -> None:
    if len(sys.argv) != 4:
        sys.exit(__doc__.strip().splitlines()[3].strip())
    src, keep, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    reader = gguf.GGUFReader(src)
    arch = reader.fields["general.architecture"].contents()
    count_key = f"{arch}.block_count"
    blocks = reader.fields[count_key].contents()
    if not 1 <= keep < blocks:
        sys.exit(f"keep between 1 and {blocks - 1} of the model's {blocks} blocks, not {keep}")
    writer = gguf.GGUFWriter(out, arch=arch, endianess=reader.endianess)
    for field in reader.fields.values():
        if field.name == "general.architecture" or field.name.startswith("GGUF."):
            continue
        value_type = field.types[0]
        sub_type = field.types[-1] if value_type == gguf.GGUFValueType.ARRAY else None
        value = keep if field.name == count_key else field.contents()
        if field.name == "general.name":
            value = f"{value} (first {keep} of {blocks} blocks)"
        writer.add_key_value(field.name, value, value_type, sub_type=sub_type)
    block = re.compile(r"^blk\.(\d+)\.")
    tensors = [
        t for t in reader.tensors
        if not (m := block.match(t.name)) or int(m.group(1)) < keep
    ]
    for t in tensors:
        writer.add_tensor_info(t.name, t.data.shape, t.data.dtype, t.data.nbytes, t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for t in tensors:
        writer.write_tensor_data(t.data, tensor_endianess=reader.endianess)
    writer.close()
    print(f"{out}: {len(tensors)} of {len(reader.tensors)} tensors, {keep} of {blocks} blocks")


if __name__ == "__main__":
    main()
