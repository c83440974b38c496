// The extension module: every op of cuda/<key>.cu and the draft step, bound by their CUDA op names.
#include "eagle4_cuda.cuh"

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "EAGLE4 CostDraftTree P0 kernels (K1..K7), CUDA baseline";
  m.def("draft_tree_layer_score_index_gen_op", &draft_tree_layer_score_index_gen_op);
  m.def("update_cumu_draft_state", &update_cumu_draft_state);
  m.def("calculate_work_deltas", &calculate_work_deltas);
  m.def("fused_tree_mask_operator", &fused_tree_mask_operator);
  m.def("convert_logits_to_probas", &convert_logits_to_probas);
  m.def("draft_tree_reject_sample", &draft_tree_reject_sample);
  m.def("update_verify_result", &update_verify_result);
  m.def("draft_step", &draft_step, "K1 -> K2 -> K3 of one draft layer in one launch (their arguments in ABI order)");
}
