# The xclbin of the EAGLE4 kernels for an FPGA board (users with Vitis and a platform); included by hls/Makefile.
#
#   make -C hls xclbin TARGET=sw_emu|hw_emu|hw PLATFORM=<platform name or path to its .xpfm> [KERNEL_FREQ_MHZ=300]
#                      [CONNECTIVITY=<file>] [XCLBIN_OUT=build/xclbin/<target>/eagle4.xclbin]
#
# The Vitis entry points (one per kernel and fused pipeline: 32-bit scalars, the counters block) and the HBM
# bank map are generated from the tops into $(XCLBIN_BUILD)/gen (eagle4.backends.xrt_abi; see README.md here).
# One .xo per entry point (v++ -c: the entry point plus the synthesized sources of the design it wraps, as its
# design.desc lists them), then one link (v++ -l) with the bank map (per kernel: each 512-bit hot stream striped over
# 4 HBM pseudo-channels of its own, every other bundle on a channel of its own; CONNECTIVITY= replaces it, e.g. for a
# platform whose memory is not named HBM[n]).
# Without v++ on PATH, or without PLATFORM, the target stops at once and says what is missing.

TARGET          ?= hw
PLATFORM        ?=
KERNEL_FREQ_MHZ ?= 300
XCLBIN_BUILD    ?= $(BUILD)/xclbin/$(TARGET)
CONNECTIVITY    ?= $(XCLBIN_BUILD)/gen/connectivity.cfg
XCLBIN_OUT      ?= $(XCLBIN_BUILD)/eagle4.xclbin
VPP             := $(shell command -v v++ 2>/dev/null)
ABI              = PYTHONPATH=$(CURDIR)/../src$${PYTHONPATH:+:$$PYTHONPATH} $(PYTHON) -m eagle4.backends.xrt_abi

.PHONY: xclbin check-vpp

check-vpp:
ifeq ($(VPP),)
	@echo "error: 'v++' is not on PATH: building an xclbin needs AMD Vitis (2023.2 or newer) and a platform." >&2
	@echo "  Source Vitis and XRT, e.g. 'source /tools/Xilinx/Vitis/2024.1/settings64.sh; source /opt/xilinx/xrt/setup.sh'," >&2
	@echo "  then rerun 'make -C hls xclbin TARGET=$(TARGET) PLATFORM=<platform>'." >&2
	@echo "  (No board? The xrt backend's host code is tested on a pyxrt test double: pytest tests/xrt.)" >&2
	@exit 2
endif
	@if [ -z "$(PLATFORM)" ]; then \
	  echo "error: PLATFORM is required (the board's platform name or .xpfm; list them with 'platforminfo -l')" >&2; exit 2; fi
	@case "$(TARGET)" in sw_emu|hw_emu|hw) ;; \
	  *) echo "error: TARGET must be sw_emu, hw_emu or hw (got '$(TARGET)')" >&2; exit 2;; esac

xclbin: check-vpp
	@mkdir -p $(XCLBIN_BUILD)
	@$(ABI) --plan $(XCLBIN_BUILD)/gen > $(XCLBIN_BUILD)/plan.txt || exit 2
	@while IFS='|' read -r k incs srcs; do \
	  echo "== v++ -c $$k (target $(TARGET), platform $(PLATFORM), $(KERNEL_FREQ_MHZ) MHz)"; \
	  $(VPP) -c -t $(TARGET) --platform $(PLATFORM) -k $$k --hls.clock $(KERNEL_FREQ_MHZ)000000:$$k $$incs \
	    --temp_dir $(XCLBIN_BUILD)/tmp_$$k -o $(XCLBIN_BUILD)/$$k.xo $$srcs < /dev/null || exit 1; \
	done < $(XCLBIN_BUILD)/plan.txt
	@echo "== v++ -l (target $(TARGET), platform $(PLATFORM), connectivity $(CONNECTIVITY))"
	@$(VPP) -l -t $(TARGET) --platform $(PLATFORM) --config $(CONNECTIVITY) --kernel_frequency $(KERNEL_FREQ_MHZ) \
	  --temp_dir $(XCLBIN_BUILD)/tmp_link -o $(XCLBIN_OUT) $$(cut -d'|' -f1 $(XCLBIN_BUILD)/plan.txt | sed 's|^|$(XCLBIN_BUILD)/|; s|$$|.xo|')
	@echo "wrote $(XCLBIN_OUT); sign off with: eagle4 signoff --hw=fpga --xclbin $(abspath $(XCLBIN_OUT))"
