# tests/cuda_emu/transform.py — rewrites kernel<<<grid, block, ...>>>(args) launches as emu_launch calls (see run.sh).
import re, sys
SYNCED = {'transpose_kernel', 'rms_fwd_rows_kernel', 'rms_bwd_rows_kernel', 'gn_fwd_rows_kernel',
          'gn_bwd_rows_kernel', 'attn_softmax_kernel', 'attn_softmax_grad_kernel'}
src = open(sys.argv[1]).read()
src = src.replace('#include <cub/cub.cuh>', '')
pat = re.compile(r'([A-Za-z_][\w:]*(?:<[^<>;]*>)?)<<<(.*?)>>>\((.*?)\);', re.S)
def rep(m):
    name, cfg, args = m.group(1), m.group(2), m.group(3)
    parts = [p.strip() for p in re.split(r',(?![^()]*\))', cfg)]
    # kernels whose blocks synchronise (__syncthreads) run on real threads
    # (1), the *_block_kernel reductions on fibers (2), the rest serially (0)
    base = name.split('<')[0]
    threaded = '1' if base in SYNCED else '2' if base.endswith('_block_kernel') else '0'
    return 'emu_launch(edim3(%s), edim3(%s), %s, [&]() { %s(%s); });' % (parts[0], parts[1], threaded, name, args)
out = pat.sub(rep, src)
assert '<<<' not in out
open(sys.argv[2], 'w').write('#include "shim.h"\n' + out)
