import re, sys
from collections import Counter
s = open(sys.argv[1]).read()
for f in re.split(r'\n\s*Function : ', s):
    name = f.split('\n')[0]
    if 'k5r14_kernelILi8ELb' in name :
        ins = re.findall(r'/\*[0-9a-f]{4}\*/\s+([^;]+);', f)
        ops = [(i.split()[1] if i.startswith('@') else i.split()[0]).split('.')[0] for i in ins]
        c = Counter(ops)
        print(name[:70], len(ops), {k: c[k] for k in ['MUFU', 'FFMA', 'FMUL', 'FADD', 'FCHK', 'CALL', 'BRA', 'FSETP', 'LDG', 'STG']})
