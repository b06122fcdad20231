// Token ids from the official Rust tokenizer (npm `tokenizers`), for the
// golden files. Reads {"tokenizer": {...}, "inputs": [[text, pair|null], ...]}
// on stdin and writes [{"ids", "type_ids", "tokens"}, ...] on stdout.
//
// tokenizer: {"file": "tokenizer.json"} loads the file as is (its padding
// and truncation are switched off: the goldens want whole sequences), or
// {"vocab": "vocab.txt", "lowercase": bool} builds what transformers'
// BertConverter makes of the older vocab.txt layout.
'use strict';
const tk = require('tokenizers');

function vocabTokenizer(vocabPath, lowercase) {
  const lines = require('fs').readFileSync(vocabPath, 'utf8').split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const vocab = {};
  lines.forEach((tok, i) => { vocab[tok] = i; });
  const t = new tk.Tokenizer(tk.WordPiece.init(vocab, { unkToken: '[UNK]' }));
  // strip_accents unset in tokenizer_config.json follows lowercase.
  t.setNormalizer(tk.bertNormalizer({ cleanText: true, handleChineseChars: true,
                                      stripAccents: lowercase, lowercase }));
  t.setPreTokenizer(tk.bertPreTokenizer());
  t.setPostProcessor(tk.templateProcessing('[CLS]:0 $A:0 [SEP]:0',
                                           '[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1',
                                           [['[CLS]', vocab['[CLS]']], ['[SEP]', vocab['[SEP]']]]));
  t.setDecoder(tk.wordPieceDecoder('##', true));
  t.addSpecialTokens(['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']);
  return t;
}

async function main() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  const req = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  let t;
  if (req.tokenizer.file) {
    t = tk.Tokenizer.fromFile(req.tokenizer.file);
    t.disableTruncation();
    t.disablePadding();
  } else {
    t = vocabTokenizer(req.tokenizer.vocab, req.tokenizer.lowercase);
  }
  const out = [];
  for (const [text, pair] of req.inputs) {
    const e = await t.encode(text, pair === null ? null : pair);
    out.push({ ids: e.getIds(), type_ids: e.getTypeIds(), tokens: e.getTokens() });
  }
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => { console.error(e); process.exit(1); });
