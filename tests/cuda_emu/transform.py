# tests/cuda_emu/transform.py — rewrites kernel<<<grid, block, ...>>>(args) launches as emu_launch calls (see run.sh).
import re, sys
src = open(sys.argv[1]).read()
src = src.replace('#include <cub/cub.cuh>', '')
pat = re.compile(r'([A-Za-z_][\w:]*(?:<[^<>;]*>)?)<<<(.*?)>>>\((.*?)\);', re.S)
def rep(m):
    name, cfg, args = m.group(1), m.group(2), m.group(3)
    parts = [p.strip() for p in re.split(r',(?![^()]*\))', cfg)]
    # 1: real threads (the transpose's barrier), 2: fibers (*_block_kernel), 0: serial
    threaded = '1' if 'transpose_kernel' in name else '2' if '_block_kernel' in name else '0'
    return 'emu_launch(edim3(%s), edim3(%s), %s, [&]() { %s(%s); });' % (parts[0], parts[1], threaded, name, args)
out = pat.sub(rep, src)
assert '<<<' not in out
open(sys.argv[2], 'w').write('#include "shim.h"\n' + out)
