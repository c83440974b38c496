# One Vitis HLS step for one kernel; driven by hls/Makefile through environment variables:
#   EAGLE4_KERNEL, EAGLE4_STEP (csim|csynth|cosim|export), EAGLE4_PART, EAGLE4_CLOCK_NS,
#   EAGLE4_HLS_DIR (the hls/ folder), EAGLE4_DUMP_DIR (dumps for the testbench's -argv).
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
