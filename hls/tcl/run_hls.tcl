# One Vitis HLS step for one kernel or fused design; driven by hls/Makefile through environment variables:
#   EAGLE4_KERNEL (a kernel key, or a fused design: fused_draft | fused_verify), EAGLE4_STEP
#   (csim|csynth|cosim|export), EAGLE4_PART, EAGLE4_CLOCK_NS, EAGLE4_HLS_DIR (the hls/ folder),
#   EAGLE4_DUMP_DIR (dumps for the testbench's -argv; per-kernel flow only).
# Each step runs the ones it depends on (cosim needs csynth); a failing step stops the script.

proc need {name} {
  if {![info exists ::env($name)]} { puts stderr "run_hls.tcl: environment variable $name is not set"; exit 2 }
  return $::env($name)
}
set kernel   [need EAGLE4_KERNEL]
set step     [need EAGLE4_STEP]
set part     [need EAGLE4_PART]
set clock_ns [need EAGLE4_CLOCK_NS]
set hls_dir  [need EAGLE4_HLS_DIR]

# Fused dataflow designs (hls/fused/): design -> top, folder and design sources (relative to hls/).
# The top is the concrete synthesis wrapper (<design>_synth.cpp) around the templated pipeline top;
# the per-kernel sources listed define what the composed cores reference (e.g. EAGLE4_K2_DECAY).
# No testbench: their C-simulation is g++ (pytest tests/harness/test_fused_designs.py).
set fused_designs [dict create \
  fused_draft [dict create top fused_draft_top dir fused/draft_pipeline files {
    fused/draft_pipeline/draft_pipeline_synth.cpp
    fused/draft_pipeline/draft_pipeline.cpp
    update_draft_state/update_draft_state.cpp
  }] \
  fused_verify [dict create top fused_verify_top dir fused/verify_pipeline files {
    fused/verify_pipeline/verify_pipeline_synth.cpp
    fused/verify_pipeline/verify_pipeline.cpp
  }]]

if {[dict exists $fused_designs $kernel]} {
  # ---- fused design: per-design file list, no testbench ----
  if {$step eq "csim" || $step eq "cosim"} {
    puts stderr "run_hls.tcl: $kernel has no Vitis testbench; its C-simulation (EXACT against the unfused chain)"
    puts stderr "  runs with g++: python -m pytest tests/harness/test_fused_designs.py tests/harness/test_fused_synth_tops.py"
    exit 2
  }
  set d      [dict get $fused_designs $kernel]
  set src    "$hls_dir/[dict get $d dir]"
  set cflags "-std=c++17 -I$hls_dir/include -I$src"
  foreach f [dict get $d files] {
    if {![file exists "$hls_dir/$f"]} { puts stderr "run_hls.tcl: no design source $hls_dir/$f"; exit 2 }
  }
  open_project -reset proj
  set_top [dict get $d top]
  foreach f [dict get $d files] { add_files "$hls_dir/$f" -cflags $cflags }
  open_solution -reset solution1 -flow_target vitis
  set_part $part
  create_clock -period $clock_ns -name default
  config_interface -m_axi_latency 64
  switch -- $step {
    csynth { csynth_design }
    export { csynth_design; export_design -format xo }
    default { puts stderr "run_hls.tcl: unknown step $step"; exit 2 }
  }
  exit 0
}

# ---- one kernel (hls/<key>/): top <key>_top, testbench tb_<key>.cpp on the dumps ----
set dump_dir [need EAGLE4_DUMP_DIR]
set src      "$hls_dir/$kernel"
set cflags   "-std=c++17 -I$hls_dir/include -I$src"

if {![file exists "$src/$kernel.cpp"]} { puts stderr "run_hls.tcl: no kernel source $src/$kernel.cpp"; exit 2 }
set dumps [lsort [glob -nocomplain "$dump_dir/*.npz"]]
if {[llength $dumps] == 0} { puts stderr "run_hls.tcl: no dumps in $dump_dir (make dumps)"; exit 2 }

open_project -reset proj
set_top "${kernel}_top"
add_files "$src/$kernel.cpp" -cflags $cflags
add_files -tb "$src/tb_$kernel.cpp" -cflags "$cflags -I$hls_dir/include/tb"
add_files -tb "$src/${kernel}_capi.cpp" -cflags "$cflags"
open_solution -reset solution1 -flow_target vitis
set_part $part
create_clock -period $clock_ns -name default
config_interface -m_axi_latency 64

proc run_csim {dumps} {
  foreach d $dumps { csim_design -argv $d }
}
switch -- $step {
  csim   { run_csim $dumps }
  csynth { csynth_design }
  cosim  { csynth_design; cosim_design -argv [lindex $dumps 0] -trace_level none }
  export { csynth_design; export_design -format xo }
  default { puts stderr "run_hls.tcl: unknown step $step"; exit 2 }
}
exit 0
