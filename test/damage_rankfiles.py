#!/usr/bin/env python3
"""damage_rankfiles.py -- rank files as a crash, a full disk or a hand edit
leave them, for collate_damage.t: copies the *.jsonl of SRC into DST and
damages them, seeded (the same seed and files give the same damage).

  damage_rankfiles.py SRC DST SEED     random damage, 1-6 edits
  damage_rankfiles.py SRC DST --case NAME
      a fixed case: huge-ts (an event at the largest 64-bit microsecond
      time and one at 1e308), no-events (only the records that are not
      events), empty (every file 0 bytes), cut-mid-line (the file ends
      inside its last line), binary (a line of bytes that are not UTF-8),
      big-uint (a Coll's seq and a state's transSize past 2^63: unsigned
      values NCCL may hand over, which the files must carry and the
      readers read)

Random edits: a value inside a record replaced (numbers at and beyond the
64-bit limits, strings, nulls, nested containers) or a key dropped; a
line deleted, duplicated, cut short or with bytes overwritten; a file cut
at any byte."""
import glob, json, os, random, shutil, sys

def main():
    src, dst, how = sys.argv[1], sys.argv[2], sys.argv[3:]
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    files = []
    for f in sorted(glob.glob(os.path.join(src, '*.jsonl'))):
        shutil.copy(f, dst)
        files.append(os.path.join(dst, os.path.basename(f)))
    if how[0] == '--case':
        fixed(how[1], files)
    else:
        damage(random.Random(int(how[0])), files)

def lines_of(f):
    return open(f, 'rb').read().split(b'\n')

def write(f, lines):
    open(f, 'wb').write(b'\n'.join(lines))

def records(lines):
    """(index, record) for each line that is JSON (a list: the caller edits lines)."""
    out = []
    for i, l in enumerate(lines):
        try:
            out.append((i, json.loads(l)))
        except ValueError:
            pass
    return out

def fixed(name, files):
    for f in files:
        lines = lines_of(f)
        if name == 'huge-ts':
            for i, r in records(lines):
                if r.get('recordType') == 'event' and 'start' in r:
                    r['start']['ts'] = 2**63 - 1
                    lines[i] = json.dumps(r).encode()
                    r['start']['ts'] = 1e308
                    r['stop'] = {'ts': -1e308}
                    lines.insert(i, json.dumps(r).encode())
                    break
        elif name == 'no-events':
            lines = [l for l in lines if b'"recordType":"event"' not in l]
        elif name == 'empty':
            lines = []
        elif name == 'cut-mid-line':
            data = b'\n'.join(lines).rstrip(b'\n')
            lines = [data[:len(data) - 7]]
        elif name == 'big-uint':
            for i, r in records(lines):
                if r.get('type') == 'ncclProfileColl' and isinstance(r.get('details'), dict):
                    r['details']['seq'] = 2**64 - 1
                    lines[i] = json.dumps(r).encode()
                elif r.get('recordType') == 'state' and 'transSize' in r:
                    r['transSize'] = 2**63 + 5
                    lines[i] = json.dumps(r).encode()
        elif name == 'binary':
            lines.insert(len(lines) // 2, bytes(range(128, 256)) + b'{"recordType":')
        else:
            sys.exit('unknown case ' + name)
        write(f, lines)

ODD = [None, True, -1, 0, 2**64, 2**63 - 1, -2**63, 1e308, -1e308, 3.5, '', 'x' * 3000,
       '\u00ff"\\', [], {}, [1, 2], {'a': 1}, 4294967296, 65535, 65536]

def jmut(R, v):
    if isinstance(v, dict) and v and R.random() < 0.8:
        k = R.choice(list(v))
        if R.random() < 0.15:
            del v[k]
        else:
            v[k] = jmut(R, v[k])
        return v
    if isinstance(v, list) and v and R.random() < 0.8:
        i = R.randrange(len(v))
        r = R.random()
        if r < 0.15:
            del v[i]
        elif r < 0.25:
            v.append(v[i])
        else:
            v[i] = jmut(R, v[i])
        return v
    return R.choice(ODD)

def damage(R, files):
    for _ in range(R.randint(1, 6)):
        f = R.choice(files)
        lines = lines_of(f)
        op, i = R.random(), R.randrange(len(lines))
        if op < 0.45:
            try:
                lines[i] = json.dumps(jmut(R, json.loads(lines[i]))).encode()
            except ValueError:
                pass
        elif op < 0.55:
            del lines[i]
        elif op < 0.62:
            lines.insert(i, lines[R.randrange(len(lines))])
        elif op < 0.75:
            b = bytearray(lines[i])
            for _ in range(R.randint(1, 4)):
                if b:
                    b[R.randrange(len(b))] = R.randrange(256)
            lines[i] = bytes(b)
        elif op < 0.85:
            data = b'\n'.join(lines)
            lines = [data[:R.randrange(len(data) + 1)]]
        else:
            lines[i] = lines[i][:R.randrange(len(lines[i]) + 1)]
        write(f, lines)

main()
