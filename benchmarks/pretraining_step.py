"""
Figure 3: tokens/s of a full pre-training update of Masked ELMo (`maelmo_masked_elmo_lm`: dynamic masking,
the biLSTM encoder, the tied softmax at the masked positions only, gradient clipping, Adam) against a
`transformers.BertForMaskedLM` of the same number of non-embedding parameters, with the same vocabulary
size, batch and sequence length, the same masking (the project's `MlmMasking`, 15% with 80/10/10) and
the same optimizer. Both are built from configs in-process: no download.

The BERT side has hidden size d (heads of 64, feed-forward 4d) and as many layers as bring its
non-embedding parameters closest to Masked ELMo's. At the paper's size (d=768, 4096 cells) that is 11
layers (78.6M against Masked ELMo's 81.9M): BERT-base less one layer. `scripts/gpu_checks.sh` times the real
BERT-base (12 layers) through its config.

Two BERT rows are measured: `BertForMaskedLM` as Hugging Face runs it (the MLM head and the 29k-way
softmax at every position, labels -100 where nothing is masked), and the same model with its head run at
the masked positions only, as Masked ELMo does, which isolates the encoders.

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c 1 .venv/bin/python benchmarks/pretraining_step.py [--paper]
    .venv/bin/python benchmarks/pretraining_step.py --device cuda --paper --autocast bf16 [--mask-sets 4] [--tf32 on]

On a GPU, Masked ELMo's LSTM calls replay from CUDA graphs (the configs' default), and a row "eager" times the
same update without them; `--tf32` sets TF32 the same for BERT's matmuls and the LSTM's recurrence (default off:
fp32 on both sides; torch's own defaults would run the LSTM in TF32 and BERT in fp32).
"""

import common
import torch
import torch.nn.functional as F
from transformers import BertConfig, BertForMaskedLM

from maelmo_plugin.lm.masking import MlmMasking

TARGET = 1.5


def matched_bert(
    vocab_size: int, hidden: int, sequence_length: int, non_embedding_target: int
) -> BertForMaskedLM:
    """The BertForMaskedLM of hidden size `hidden` whose non-embedding parameter count is nearest the target."""

    def config(layers: int) -> BertConfig:
        return BertConfig(
            vocab_size=vocab_size,
            hidden_size=hidden,
            num_hidden_layers=layers,
            num_attention_heads=max(1, hidden // 64),
            intermediate_size=4 * hidden,
            max_position_embeddings=max(512, sequence_length),
        )

    base, one = (common.non_embedding_parameters(BertForMaskedLM(config(layers))) for layers in (0, 1))
    layers = max(1, round((non_embedding_target - base) / (one - base)))
    return BertForMaskedLM(config(layers))


def bert_base(vocab_size: int, sequence_length: int) -> BertForMaskedLM:
    """HF's bert-base (12 layers of 768, 12 heads, feed-forward 3072), with SDPA attention, the issue's baseline."""
    config = BertConfig(vocab_size=vocab_size, max_position_embeddings=max(512, sequence_length))
    config._attn_implementation = "sdpa"
    return BertForMaskedLM(config)


def bert_step(
    bert: BertForMaskedLM,
    masking: MlmMasking,
    token_ids: torch.Tensor,
    head_everywhere: bool,
    forward_context,
    copies: int = 1,
):
    """One Adam update of `bert`; `copies` > 1 runs the batch that many times with other masks, as k mask sets."""
    optimizer = torch.optim.Adam(bert.parameters(), lr=1e-3)
    rows = token_ids.repeat(copies, 1)

    def losses():
        selected = masking.select(rows) >= 0
        corrupted = masking.corrupt(rows, selected)
        if head_everywhere:
            yield bert(input_ids=corrupted, labels=rows.masked_fill(~selected, -100)).loss
        else:
            hidden = bert.bert(input_ids=corrupted).last_hidden_state[selected]
            yield F.cross_entropy(bert.cls(hidden), rows[selected])

    return lambda: common.adam_step(bert, optimizer, losses, forward_context)


def main() -> None:
    parser = common.parser(__doc__)
    common.add_size_options(parser, "512x2048", batch_size=16, sequence_length=128, vocab_size=True)
    common.add_autocast_option(parser)
    parser.add_argument(
        "--paper", action="store_true", help="d=768, 4096 cells, batch 64 (minutes per step on a CPU core)"
    )
    parser.add_argument(
        "--mask-sets",
        type=int,
        default=1,
        help="k mask sets per update, batched (the configs use 4); BERT runs its batch k times with other masks",
    )
    parser.add_argument(
        "--bert-base", action="store_true", help="also time HF's bert-base (12 layers); on with --paper"
    )
    args = parser.parse_args()
    if args.paper:
        args.size, args.batch_size, args.bert_base = "768x4096", 64, True
    device = common.setup(args)
    dim, cells = common.parse_size(args.size)
    k = args.mask_sets

    def masked_elmo(**options):
        return (
            common.masked_elmo_lm(args.vocab_size, dim, cells, num_mask_sets=k, **options).to(device).train()
        )

    model = masked_elmo()
    bert = matched_bert(args.vocab_size, dim, args.sequence_length, common.non_embedding_parameters(model))
    bert = bert.to(device).train()
    token_ids = common.token_batch(args.vocab_size, args.batch_size, args.sequence_length, device)
    masking = MlmMasking(model.vocab)
    forward_context = common.autocast(args, device)
    sides = {
        "masked_elmo": common.masked_lm_step(model, token_ids, forward_context),
        "bert_hf": bert_step(bert, masking, token_ids, True, forward_context, k),
        "bert_masked_head": bert_step(bert, masking, token_ids, False, forward_context, k),
    }
    labels = {
        "bert_hf": f"BertForMaskedLM, {bert.config.num_hidden_layers} layers (head at every position)",
        "bert_masked_head": "the same BERT, head at masked positions only",
    }
    if args.bert_base:
        base = bert_base(args.vocab_size, args.sequence_length).to(device).train()
        sides["bert_base"] = bert_step(base, masking, token_ids, True, forward_context, k)
        labels["bert_base"] = "HF bert-base, 12 layers (head at every position)"
    if device.type == "cuda":
        # The same update with every LSTM call launched eagerly: what the CUDA graphs bring, in this invocation.
        sides["masked_elmo_eager"] = common.masked_lm_step(
            masked_elmo(cuda_graphs=False), token_ids, forward_context
        )
    if device.type == "cpu" and args.autocast == "off":
        sides["masked_elmo_torch_lstm"] = common.masked_lm_step(masked_elmo(cpu_recurrence=False), token_ids)
    seconds = common.interleaved(sides, device, args.warmup, args.repeats)
    tokens = args.batch_size * args.sequence_length
    ours = tokens / seconds["masked_elmo"]
    print(
        f"# batch {args.batch_size} x {args.sequence_length}, k = {k} mask set(s) batched, vocabulary "
        f"{args.vocab_size}, Adam; Masked ELMo d={dim}/{cells} cells: "
        f"{common.non_embedding_parameters(model) / 1e6:.1f}M non-embedding parameters; BERT "
        f"{bert.config.num_hidden_layers} x {bert.config.hidden_size}: {common.non_embedding_parameters(bert) / 1e6:.1f}M. "
        f"Rates in corpus word-pieces per second ({tokens} per update, whatever k)."
    )
    rows = []
    for name, label in labels.items():
        ratio = seconds[name] / seconds["masked_elmo"]
        rows.append(
            [
                label,
                ours,
                tokens / seconds[name],
                f"{ratio:.2f}x",
                f"≥{TARGET}x",
                common.verdict(ratio, TARGET),
            ]
        )
    common.print_table(["baseline", "Masked ELMo tok/s", "baseline tok/s", "speed-up", "target", ""], rows)
    if "masked_elmo_eager" in seconds:
        ratio = seconds["masked_elmo_eager"] / seconds["masked_elmo"]
        print(
            f"\n# The same Masked ELMo update with every LSTM call eager (cuda_graphs false): "
            f"{tokens / seconds['masked_elmo_eager']:,.0f} tok/s; the CUDA graphs make it {ratio:.2f}x faster."
        )
    if "masked_elmo_torch_lstm" in seconds:
        ratio = seconds["masked_elmo_torch_lstm"] / seconds["masked_elmo"]
        print(
            f"\n# The same Masked ELMo update with torch's CPU LSTM: "
            f"{tokens / seconds['masked_elmo_torch_lstm']:,.0f} tok/s; the CPU recurrence makes it {ratio:.2f}x faster."
        )


if __name__ == "__main__":
    main()
