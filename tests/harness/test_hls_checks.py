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


# ---- the loop rules of the per-kernel tops and the hot-bundle rule (ports: the top's m_axi ports)
LOOP_PLANTS = {
    "conditional-port-if": ("""void my_top(const float* logits, float* out, int V) {
#pragma HLS INTERFACE m_axi port = logits bundle = gmem0 max_widen_bitwidth = 512
  for (int c = 0; c < (V + 15) / 16; ++c) {
#pragma HLS PIPELINE II = 1
    for (int l = 0; l < 16; ++l) {
#pragma HLS UNROLL
      const int v = c * 16 + l;
      if (v < V) out[v] = logits[v];
    }
  }
}
""", "conditional-port: logits[...] under 'if'"),
    "conditional-port-ternary-write": ("""void my_top(float* probas, int V, int best) {
  for (int c = 0; c < V / 16; ++c) {
#pragma HLS PIPELINE II = 1
    for (int l = 0; l < 16; ++l) {
#pragma HLS UNROLL
      const int v = c * 16 + l;
      v == best ? probas[v] = 1.0f : probas[v] = 0.0f;
    }
  }
}
""", "conditional-port: probas[...] under '?:'"),
    "conditional-port-block": ("""template <typename P>
void core(P mask_bool, int n, bool debug) {
  for (int k = 0; k < n; ++k) {
#pragma HLS PIPELINE II = 1
    for (int i = 0; i < 8; ++i) {
#pragma HLS UNROLL
      if (debug) {
        mask_bool[8 * k + i] = 1;
      }
    }
  }
}
""", "conditional-port: mask_bool[...] under 'if'"),
    "mod64": ("""void core(const long* in, int* out, int K, int n) {
  for (int r = 0; r < n; ++r) {
#pragma HLS PIPELINE II = 1
    const int64_t oi = in[r];
    out[r] = static_cast<int>(oi % K);
  }
}
""", "mod64: '%' on a 64-bit operand inside the pipelined loop"),
    "mod64-cast": ("""void core(const int* in, int* out, int K, int n) {
  for (int r = 0; r < n; ++r) {
#pragma HLS PIPELINE II = 1
    out[r] = static_cast<int>(int64_t(in[r]) % K);
  }
}
""", "mod64"),
    "invariant-condition": ("""void core(const float* delta, float* out, int K, bool write_per_req) {
  for (int w = 0; w <= K; ++w) {
#pragma HLS PIPELINE II = 1
    if (write_per_req) out[w] = delta[w];
  }
}
""", "invariant-condition: out[...] under the loop-invariant test 'write_per_req'"),
    "invariant-condition-ternary": ("""template <typename PTok>
void core(PTok tokens, long* out, const long* tok, const int* top, int K, bool hot) {
  for (int r = 0; r < K; ++r) {
#pragma HLS PIPELINE II = 1
    const int p = top[r];
    out[r] = hot ? tok[p] : tokens[p];
  }
}
""", "invariant-condition: tokens[...] under the loop-invariant test 'hot'"),
    "index64": ("""void core(int* out, int n) {
  for (int64_t p = 0; p < n; ++p) {
#pragma HLS PIPELINE II = 1
    out[p] = 0;
  }
}
""", "index64: int64_t induction variable p"),
}


@pytest.mark.parametrize("plant", sorted(LOOP_PLANTS))
def test_a_planted_loop_violation_fails(tmp_path, plant):
    code, msg = LOOP_PLANTS[plant]
    f = tmp_path / "x.cpp"
    f.write_text(code)
    problems = hls_checks.check_loops(f, {"logits", "probas", "mask_bool", "out", "tokens"})
    assert any(msg in p for p in problems), problems
    assert all(p.startswith(str(f) + ":") for p in problems)


def test_canonical_loops_pass(tmp_path):
    """Whole beats unconditional, the masked tail in its own loop, a select on chip, a 32-bit modulo, a
    conditional scatter outside any unrolled loop and a documented 64-bit loop are all fine."""
    f = tmp_path / "ok.cpp"
    f.write_text("""void my_top(const float* logits, float* probas, int64_t* free_slots, int V, int K, int n) {
  float row_buf[1024];
  const int n_full = V / 16;
  for (int c = 0; c < n_full; ++c) {
#pragma HLS PIPELINE II = 1
    for (int l = 0; l < 16; ++l) {
#pragma HLS UNROLL
      const float x = logits[c * 16 + l];
      row_buf[c * 16 + l] = x > 0.0f ? x : 0.0f;  // a select in registers, on chip
    }
  }
  for (int l = 0; l < V - n_full * 16; ++l) {
#pragma HLS PIPELINE II = 1
    probas[n_full * 16 + l] = row_buf[n_full * 16 + l];
  }
  int nfree = 0;
  for (int i = 0; i < n; ++i) {
#pragma HLS PIPELINE II = 1
    const int r = i % K;  // 32-bit
    if (r == 0) free_slots[i] = -1;  // a data-dependent test in a pipelined (not unrolled) loop
    free_slots[n + i] = i < nfree ? logits[i] : -1;  // the test changes with the loop variable
    nfree += r;
  }
  for (int64_t j = 0; j < n; ++j) {  // 64-bit: the trip count exceeds 2^31 at the bounds
#pragma HLS PIPELINE II = 1
    free_slots[j] = 0;
  }
}
""")
    assert hls_checks.check_loops(f, {"logits", "probas", "free_slots"}) == []


def test_core_accessors_count_as_ports():
    assert hls_checks.accessor_params("""template <typename PTok, typename PHot>
void score(PTok tokens, PHot hot_token_id, PORT(float) curr, int K, int64_t cc, float* scratch) {}
""") == {"tokens", "hot_token_id", "curr"}


def test_a_planted_shared_hot_bundle_fails(tmp_path):
    f = tmp_path / "x.cpp"
    f.write_text("""extern "C" void my_top(const float* logits, const float* temps, float* probas) {
#pragma HLS INTERFACE m_axi port = logits offset = slave bundle = gmem0 max_widen_bitwidth = 512
#pragma HLS INTERFACE m_axi port = temps offset = slave bundle = gmem0
#pragma HLS INTERFACE m_axi port = probas offset = slave bundle = gmem1 max_widen_bitwidth = 512
  probas[0] = logits[0] / temps[0];
}
""")
    problems = hls_checks.check_hot_bundles(f)
    assert len(problems) == 1 and "hot-bundle: hot port logits (512-bit) shares bundle gmem0 with temps" in problems[0]
    f.write_text(f.read_text().replace("port = temps offset = slave bundle = gmem0", "port = temps offset = slave bundle = gmem2"))
    assert hls_checks.check_hot_bundles(f) == []


def test_the_loop_rules_see_the_per_kernel_ports():
    """The per-kernel tops' m_axi ports are found (the loop rules would pass vacuously without them)."""
    from eagle4.backends import csim, hls_designs

    ds = hls_designs.designs(csim.HLS_DIR)
    per_kernel = {n: d for n, d in ds.items() if d.tb}
    assert len(per_kernel) == 7
    for name in per_kernel:
        ports = {p for f in hls_designs.synth_sources(name, ds) for p, _, _ in hls_checks.maxi_ports(f.read_text())}
        assert len(ports) >= 3, (name, ports)
