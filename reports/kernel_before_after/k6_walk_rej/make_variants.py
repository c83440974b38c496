# K6's walk: the final row's rejected tokens from a per-row list written in phase A (experiment; base = a253862's source)
from pathlib import Path
d = Path(__file__).parent
cur = (d / "cur.cu").read_text()
def sub(s, a, b):
    assert s.count(a) == 1, a[:70]
    return s.replace(a, b)
CHASE = '''    if (stopped) {  // every in-range token of the final row's chain was rejected
      int64_t cur = s_next[row];
      for (int guard = 0; cur != -1 && guard <= Q; ++guard) {
        if (cur < 0 || cur >= Q) break;
        const int64_t tok = s_cand[cur];
        if (tok >= 0 && tok < V) s_rej[nrej++] = tok;
        cur = s_sib[cur];
      }
    }
'''
# timing only: no rejected tokens (outputs differ wherever the walk stops)
norej = sub(cur, CHASE, "")
R = cur
R = sub(R, "__host__ __device__ constexpr size_t k6_tree_bytes(int64_t Q) { return (size_t)Q * (6 * 8 + 4 + 4) + 8; }",
        "constexpr int K6_PK = 8;  // children per row whose tested probabilities phase A loads ahead\n"
        "__host__ __device__ constexpr size_t k6_tree_bytes(int64_t Q) { return (size_t)Q * (6 * 8 + 8 * K6_PK + 4 + 4 + 4) + 8; }")
R = sub(R, '''  float* s_pass = reinterpret_cast<float*>(s_rej + Q + 1);
  int* s_acc = reinterpret_cast<int*>(s_pass + Q);  // per row: the child the walk accepts under it (-1: none)
  __shared__ int s_row, s_nrej;
  __shared__ long long s_last;
''', '''  int64_t* s_rowtok = s_rej + Q + 1;  // per row: the in-range tokens of its first K6_PK children, in chain order
  float* s_pass = reinterpret_cast<float*>(s_rowtok + Q * K6_PK);
  int* s_acc = reinterpret_cast<int*>(s_pass + Q);  // per row: the child the walk accepts under it (-1: none)
  int* s_nrowtok = s_acc + Q;  // per row: how many s_rowtok holds, or -1 where its chain goes on past K6_PK
  __shared__ int s_row, s_nrej;
  __shared__ long long s_last;
  __shared__ const int64_t* s_rejp;
''')
R = sub(R, "  constexpr int PK = 8;\n  for (int r = tid; r < Q; r += nt) {", "  constexpr int PK = K6_PK;\n  for (int r = tid; r < Q; r += nt) {")
R = sub(R, '''    int64_t cur = s_next[r];
    const int64_t tp = s_tpred[r];
#pragma unroll
    for (int k = 0; k < PK; ++k) {
      pv[k] = 0.0f;
      ck[k] = -1;
      if (cur >= 0 && cur < Q && k <= Q) {
        ck[k] = (int)cur;
        const int64_t tok = s_cand[cur];
        if (tok >= 0 && tok < V) {
          inr |= 1u << k;
''', '''    int64_t cur = s_next[r];
    const int64_t tp = s_tpred[r];
    int nin = 0;  // in-range tokens so far: the row's rejected tokens if the walk stops at it
#pragma unroll
    for (int k = 0; k < PK; ++k) {
      pv[k] = 0.0f;
      ck[k] = -1;
      if (cur >= 0 && cur < Q && k <= Q) {
        ck[k] = (int)cur;
        const int64_t tok = s_cand[cur];
        if (tok >= 0 && tok < V) {
          inr |= 1u << k;
          s_rowtok[r * PK + nin++] = tok;
''')
R = sub(R, '''    const float pass = s_pass[r];
    auto resolve''', '''    // the walk's scan of a final row ends where this chase ended (same tests); past K6_PK it chases itself
    s_nrowtok[r] = (cur >= 0 && cur < Q && PK <= Q) ? -1 : nin;
    const float pass = s_pass[r];
    auto resolve''')
R = sub(R, CHASE, '''    const int64_t* rejp = s_rej;
    if (stopped) {  // every in-range token of the final row's chain was rejected
      const int nr = s_nrowtok[row];
      if (nr >= 0) {  // listed by phase A
        rejp = s_rowtok + row * K6_PK;
        nrej = nr;
      } else {
        int64_t cur = s_next[row];
        for (int guard = 0; cur != -1 && guard <= Q; ++guard) {
          if (cur < 0 || cur >= Q) break;
          const int64_t tok = s_cand[cur];
          if (tok >= 0 && tok < V) s_rej[nrej++] = tok;
          cur = s_sib[cur];
        }
      }
    }
    s_rejp = rejp;
''')
R = sub(R, "  return K6Walk{s_row, s_last, s_nrej, s_rej, s_tpred[s_row]};", "  return K6Walk{s_row, s_last, s_nrej, s_rejp, s_tpred[s_row]};")
(d / "norej.cu").write_text(norej)
(d / "rowrej.cu").write_text(R)
print("ok")
