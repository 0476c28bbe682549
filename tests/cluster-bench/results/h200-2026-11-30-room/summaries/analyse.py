# The domain summaries a trace build dumped (each rank's DOMAIN_BOXES
# `DomainSummary` records per evaluation, summary-r{rank}-e{eval}.bin):
# each rank's four fine boxes that reach nearest the galaxy's centre for
# their size (ranked by L² / (d + 0.3)³: L the box's largest extent, d its
# distance from the origin). Output: boxes.txt.
import struct, sys
C = 256
def load(path):
    b = open(path, 'rb').read()
    return [struct.unpack_from('<4f4fffII', b, i * 48) for i in range(len(b) // 48)]
def dist(x):
    return sum(max(0, l, -h) ** 2 for l, h in zip(x[0:3], x[4:7])) ** 0.5
def ext(x):
    return max(h - l for l, h in zip(x[0:3], x[4:7]))
for r in (0, 1):
    for e in range(9):
        fine = [x for x in load(f'summary-r{r}-e{e}.bin')[C:] if x[10] > 0]
        bad = sorted(fine, key=lambda x: ext(x) ** 2 / (dist(x) + 0.3) ** 3, reverse=True)[:4]
        print(f'rank {r} evaluation {e}:', ', '.join(f'd = {dist(x):.2f} L = {ext(x):.2f}' for x in bad))
