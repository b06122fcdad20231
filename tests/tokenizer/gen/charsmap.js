// Builds a SentencePiece `precompiled_charsmap` (the blob a Precompiled
// normalizer carries in tokenizer.json) from Unicode NFKC data, in the exact
// binary format sentencepiece writes and Hugging Face's spm_precompiled reads:
//
//   u32 LE   trie size in bytes (4 * units)
//   u32 LE[] a Darts double array: unit = label (bits 0-7) | has_leaf (bit 8)
//            | offset extension (bit 9) | offset (bits 10-30) | is_leaf (bit 31,
//            then bits 0-30 are the value); a child of the node at p with
//            offset o sits at p ^ o ^ label, its leaf at p ^ o
//   bytes    the replacement strings, each NUL-terminated; a leaf value is the
//            byte offset of its string
//
// The rules follow sentencepiece's nmt_nfkc (builder.cc): every code point
// whose NFKC differs from itself maps to its NFKC, canonical decompositions
// of composed characters map to the NFKC of the composed character (multi-
// character keys, which the Precompiled normalizer matches per grapheme),
// control characters are removed and the Unicode spaces become ' '. JS's
// String.prototype.normalize supplies the NFKC data. The content need not be
// byte-identical to XLM-R's table: both the C code and the reference read
// whatever the blob holds, and this one has the same format, size class and
// kinds of entries (1:0, 1:1, 1:n, n:1 mappings).
'use strict';

function rules() {
  const map = new Map();
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const s = String.fromCodePoint(cp);
    const n = s.normalize('NFKC');
    if (n !== s) map.set(s, n);
    const d = s.normalize('NFD');
    if ([...d].length >= 2 && d !== n) map.set(d, n);
  }
  // nmt_nfkc: drop control characters, turn the Unicode spaces into ' '.
  const controls = [];
  for (let c = 0x01; c <= 0x08; c++) controls.push(c);
  for (let c = 0x0e; c <= 0x1f; c++) controls.push(c);
  controls.push(0x0b, 0x7f, 0x8f, 0x9f, 0x200b, 0xfeff);
  for (const c of controls) map.set(String.fromCodePoint(c), '');
  for (const c of [0x09, 0x0a, 0x0c, 0x0d, 0x85, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000])
    map.set(String.fromCodePoint(c), ' ');
  for (let c = 0x2000; c <= 0x200a; c++) map.set(String.fromCodePoint(c), ' ');
  // Keys sorted by their UTF-8 bytes, as the Darts builder needs.
  return [...map.entries()]
    .map(([k, v]) => [Buffer.from(k, 'utf8'), v])
    .sort((a, b) => Buffer.compare(a[0], b[0]));
}

// A byte trie of the keys, each leaf holding the offset of its replacement.
function buildTrie(entries) {
  const root = { kids: new Map(), value: -1 };
  const strings = [];
  const offsetOf = new Map();
  let size = 0;
  for (const [key, value] of entries) {
    if (!offsetOf.has(value)) {
      offsetOf.set(value, size);
      const bytes = Buffer.from(value + '\0', 'utf8');
      strings.push(bytes);
      size += bytes.length;
    }
    let node = root;
    for (const b of key) {
      if (!node.kids.has(b)) node.kids.set(b, { kids: new Map(), value: -1 });
      node = node.kids.get(b);
    }
    node.value = offsetOf.get(value);
  }
  return { root, normalized: Buffer.concat(strings) };
}

// Lay the trie out as a double array: breadth first, each node gets the
// first unused base whose child slots (and its leaf slot, label 0) are free.
function buildDoubleArray(root) {
  const units = [0];
  const used = [true];
  const usedBase = new Set();
  const ensure = (n) => {
    while (units.length < n) {
      units.push(0);
      used.push(false);
    }
  };
  const queue = [{ node: root, pos: 0 }];
  let searchFrom = 1;
  while (queue.length) {
    const { node, pos } = queue.shift();
    const labels = [...node.kids.keys()].sort((a, b) => a - b);
    const hasLeaf = node.value >= 0;
    if (!labels.length && !hasLeaf) continue;
    const slots = hasLeaf ? [0, ...labels] : labels;
    let base = searchFrom;
    for (;; base++) {
      if (usedBase.has(base)) continue;
      ensure((base | 0xff) + 1);
      if (slots.every((l) => !used[base ^ l])) break;
    }
    while (searchFrom < used.length && used[searchFrom]) searchFrom++;
    usedBase.add(base);
    const offset = pos ^ base;
    if (offset >= 1 << 21) throw new Error('double array too large');
    units[pos] = (units[pos] & 0x1ff) | (offset << 10) | (hasLeaf ? 1 << 8 : 0);
    units[pos] >>>= 0;
    if (hasLeaf) {
      units[base] = ((1 << 31) | node.value) >>> 0;
      used[base] = true;
    }
    for (const l of labels) {
      units[base ^ l] = l;
      used[base ^ l] = true;
      queue.push({ node: node.kids.get(l), pos: base ^ l });
    }
  }
  return units;
}

function buildCharsmap() {
  const { root, normalized } = buildTrie(rules());
  const units = buildDoubleArray(root);
  const trie = Buffer.alloc(4 + 4 * units.length);
  trie.writeUInt32LE(4 * units.length, 0);
  units.forEach((u, i) => trie.writeUInt32LE(u >>> 0, 4 + 4 * i));
  return Buffer.concat([trie, normalized]);
}

module.exports = { buildCharsmap };

if (require.main === module) {
  const blob = buildCharsmap();
  console.error(`charsmap: ${blob.length} bytes, trie ${blob.readUInt32LE(0)} bytes`);
}
