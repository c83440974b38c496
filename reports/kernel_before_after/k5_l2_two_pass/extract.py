"""The committed K5 device code, cut from cuda/cost_draft_tree_kernel.cu for the standalone probe (no torch)."""
import sys
src = open(sys.argv[1]).read().split("\n")
def span(start, end):
    i = next(k for k, l in enumerate(src) if l.startswith(start))
    j = next(k for k in range(i, len(src)) if src[k].startswith(end))
    return src[i:j + 1]
out = []
out += span("static constexpr unsigned FULL", "__device__ __forceinline__ void l2_prefetch_evict_last")
out += span("", "}")[0:0]
i = next(k for k, l in enumerate(src) if l.startswith("__device__ __forceinline__ void l2_prefetch_evict_last"))
j = next(k for k in range(i, len(src)) if src[k] == "}")
out += src[i + 1:j + 1]
out += span("__device__ __forceinline__ bool amax_better", "__device__ __forceinline__ float warp_sum_rn")
i = next(k for k, l in enumerate(src) if l.startswith("__device__ __forceinline__ float warp_sum_rn"))
j = next(k for k in range(i, len(src)) if src[k] == "}")
out += src[i + 1:j + 1]
out += span("// K5 convert_logits_to_probas", "#undef E4_K5R_ARGS")
open(sys.argv[2], "w").write("\n".join(out) + "\n")
