# One Vitis HLS step for one kernel or fused design; driven by hls/Makefile through environment variables:
#   EAGLE4_KERNEL (a design name of hls/**/design.desc: a kernel key, fused_draft, fused_verify), EAGLE4_STEP
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

# The design and its sources come from its description, hls/**/design.desc (the one source list, also
# read by the g++ C-simulation build, eagle4.backends.hls_designs): "key values" lines, '#' comments.
proc read_desc {path} {
  set f [open $path]
  set text [read $f]
  close $f
  set d [dict create uses {} csim {} csim_uses {} tb {}]
  foreach line [split $text "\n"] {
    set line [string trim $line]
    if {$line eq "" || [string index $line 0] eq "#"} { continue }
    dict set d [lindex $line 0] [lrange $line 1 end]
  }
  dict set d dir [file dirname $path]
  return $d
}
proc find_design {hls_dir name} {
  foreach p [lsort [concat [glob -nocomplain "$hls_dir/*/design.desc"] [glob -nocomplain "$hls_dir/*/*/design.desc"]]] {
    set d [read_desc $p]
    if {[dict get $d name] eq $name} { return $d }
  }
  puts stderr "run_hls.tcl: no design named $name (no hls/**/design.desc with 'name $name')"
  exit 2
}
# synthesized sources: the design's own, then those of the designs it uses (absolute paths)
proc synth_files {hls_dir name} {
  set d [find_design $hls_dir $name]
  set out {}
  foreach f [dict get $d synth] { lappend out [file join [dict get $d dir] $f] }
  foreach u [dict get $d uses] {
    foreach f [synth_files $hls_dir $u] { if {[lsearch -exact $out $f] < 0} { lappend out $f } }
  }
  return $out
}

set design [find_design $hls_dir $kernel]
set src    [dict get $design dir]
set files  [synth_files $hls_dir $kernel]
set cflags "-std=c++17 -I$hls_dir/include -I$src"
foreach f $files {
  if {![file exists $f]} { puts stderr "run_hls.tcl: no design source $f"; exit 2 }
}
# testbench: the tb files plus the C-sim-only sources (the C ABI wrapper the testbench calls)
set tb_files {}
foreach f [concat [dict get $design tb] [dict get $design csim]] { lappend tb_files [file join $src $f] }

if {[llength [dict get $design tb]] == 0} {
  # ---- a design without a Vitis testbench (the fused dataflow designs of hls/fused) ----
  if {$step eq "csim" || $step eq "cosim"} {
    puts stderr "run_hls.tcl: $kernel has no Vitis testbench; its C-simulation (EXACT against the unfused chain)"
    puts stderr "  runs with g++: python -m pytest tests/harness/test_fused_designs.py tests/harness/test_fused_synth_tops.py"
    exit 2
  }
  open_project -reset proj
  set_top [dict get $design top]
  foreach f $files { add_files $f -cflags $cflags }
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

# ---- one kernel (hls/<key>/): its top, testbench tb_<key>.cpp on the dumps ----
set dump_dir [need EAGLE4_DUMP_DIR]
set dumps [lsort [glob -nocomplain "$dump_dir/*.npz"]]
if {[llength $dumps] == 0} { puts stderr "run_hls.tcl: no dumps in $dump_dir (make dumps)"; exit 2 }

open_project -reset proj
set_top [dict get $design top]
foreach f $files { add_files $f -cflags $cflags }
foreach f $tb_files { add_files -tb $f -cflags "$cflags -I$hls_dir/include/tb" }
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
