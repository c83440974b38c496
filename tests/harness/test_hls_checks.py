"""csynth-readiness static checks (eagle4.backends.hls_checks): the designs pass, and each rule catches
a planted violation the way Vitis would ignore or reject it."""

from __future__ import annotations

import pytest

from eagle4.backends import hls_checks


def test_the_designs_pass_the_static_checks():
    assert hls_checks.check_designs() == []


PLANTS = {
    "interface": ("""void helper(int* p) {
#pragma HLS INTERFACE m_axi port = p bundle = gmem0
  p[0] = 1;
}
extern "C" void my_top(int* p) {
#pragma HLS INTERFACE m_axi port = p bundle = gmem0
  helper(p);
}
""", "interface: INTERFACE pragma in helper()"),
    "dataflow-in-loop": ("""void my_top(int n) {
  for (int b = 0; b < n; ++b) {
#pragma HLS DATAFLOW
    a(); b_();
  }
}
""", "dataflow-first"),
    "conditional-task": ("""void region(bool bypass) {
#pragma HLS DATAFLOW
  hls_stream s;
  if (bypass)
    produce_a(s);
  else
    produce_b(s);
  consume(s);
}
""", "dataflow-tasks: 'if'"),
    "statement-before-dataflow": ("""void region() {
  int x = 0;
#pragma HLS DATAFLOW
  a(x);
}
""", "statements precede the DATAFLOW pragma"),
}


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_a_planted_violation_fails(tmp_path, plant):
    code, msg = PLANTS[plant]
    f = tmp_path / "x.cpp"
    f.write_text("// a comment with #pragma HLS DATAFLOW in it is not a pragma\n" + code)
    problems = hls_checks.check_file(f, {"my_top"})
    assert any(msg in p for p in problems), problems
    assert all(p.startswith(str(f) + ":") for p in problems)


def test_canonical_forms_pass(tmp_path):
    f = tmp_path / "ok.cpp"
    f.write_text("""template <typename T>
void region(T* p, int n) {
#pragma HLS DATAFLOW
  hls_stream s;
  produce(p, n, s);  // unconditional tasks, the branch lives inside them
  consume(s, p);
}
extern "C" void my_top(int* p, int n) {
#pragma HLS INTERFACE m_axi port = p bundle = gmem0
  for (int i = 0; i < n; ++i) region(p, i);
}
""")
    assert hls_checks.check_file(f, {"my_top"}) == []
