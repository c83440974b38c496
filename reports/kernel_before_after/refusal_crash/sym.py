# symbolize backtrace_symbols_fd lines "path(+0xoff)" / "path(sym+0xoff)" with addr2line
import re, subprocess, sys
for line in sys.stdin:
    line = line.rstrip("\n")
    m = re.match(r"(\S+?)\((\S*?)\+(0x[0-9a-f]+)\)", line)
    if m and m.group(2) == "" and ".so" in m.group(1):
        try:
            out = subprocess.run(["addr2line", "-f", "-C", "-i", "-e", m.group(1), m.group(3)], capture_output=True,
                                 text=True, timeout=20).stdout.split("\n")
            line += "   => " + " / ".join(x for x in out if x)[:300]
        except Exception as e:
            line += f"   (addr2line: {e})"
    print(line, flush=True)
