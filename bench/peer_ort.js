// ONNX Runtime peer for bench/engine_bench.py, driven over stdin/stdout.
//
// usage: node bench/peer_ort.js THREADS   (onnxruntime-node from bench/peers)
// Each stdin line is a JSON command; each answer is one JSON line:
//   {"model": "x.onnx", "task": "embed|fill-mask|classify", "workload": "w.json",
//    "repeat": R, "warmup": W}
//   -> {"times_ms": [...], "probe": [...], "rss_peak_kb": N}
// probe: batch 0's first 16 outputs, or its top-1 probability per mask.
// Sessions are created once per model file (graph optimisation "all",
// intra-op threads = THREADS) and kept. Inputs are padded to each batch's
// longest sequence before timing; fill-mask takes softmax + top-5 at every
// [MASK] (id 103) inside the timed region, as the Hugging Face pipeline does.
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');
const ort = require(path.join(__dirname, 'peers', 'node_modules', 'onnxruntime-node'));

const MASK_ID = 103;
const TOPK = 5;
const threads = parseInt(process.argv[2] || '1', 10);
const sessions = new Map();

async function session(model) {
  if (!sessions.has(model)) {
    sessions.set(model, await ort.InferenceSession.create(model, {
      graphOptimizationLevel: 'all', intraOpNumThreads: threads, interOpNumThreads: 1,
      executionMode: 'sequential',
    }));
  }
  return sessions.get(model);
}

function padBatch(seqs) {
  const S = Math.max(...seqs.map((s) => s.length));
  const ids = new BigInt64Array(seqs.length * S);
  const mask = new BigInt64Array(seqs.length * S);
  seqs.forEach((s, i) => s.forEach((id, t) => {
    ids[i * S + t] = BigInt(id);
    mask[i * S + t] = 1n;
  }));
  const dims = [seqs.length, S];
  return {seqs, S, feeds: {input_ids: new ort.Tensor('int64', ids, dims),
                           attention_mask: new ort.Tensor('int64', mask, dims)}};
}

// Top-k softmax probabilities of one row of logits: [[id, prob], ...].
function topk(row) {
  let max = -Infinity;
  for (const v of row) max = v > max ? v : max;
  let sum = 0;
  for (const v of row) sum += Math.exp(v - max);
  const best = [];
  row.forEach((v, id) => {
    if (best.length < TOPK || v > best[best.length - 1][1]) {
      best.push([id, v]);
      best.sort((a, b) => b[1] - a[1]);
      if (best.length > TOPK) best.pop();
    }
  });
  return best.map(([id, v]) => [id, Math.exp(v - max) / sum]);
}

function fillMask(batch, out) {
  const V = out.dims[2];
  const answers = [];
  batch.seqs.forEach((s, i) => s.forEach((id, t) => {
    if (id === MASK_ID) {
      const start = (i * batch.S + t) * V;
      answers.push(topk(out.data.subarray(start, start + V)));
    }
  }));
  return answers;
}

async function run(cmd) {
  const sess = await session(cmd.model);
  const batches = JSON.parse(fs.readFileSync(cmd.workload, 'utf8')).batches.map(padBatch);
  const times = [];
  let probe = [];
  for (let r = 0; r < cmd.warmup + cmd.repeat; r++) {
    const t0 = process.hrtime.bigint();
    for (const [b, batch] of batches.entries()) {
      const out = (await sess.run(batch.feeds)).output;
      const answer = cmd.task === 'fill-mask' ? fillMask(batch, out) : null;
      if (b === 0 && r === 0)
        probe = answer ? answer.map((a) => a[0][1]) : Array.from(out.data.subarray(0, 16));
    }
    if (r >= cmd.warmup) times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return {times_ms: times, probe, rss_peak_kb: peakRssKb()};
}

function peakRssKb() {
  const m = /VmHWM:\s+(\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m ? parseInt(m[1], 10) : null;
}

async function main() {
  const rl = readline.createInterface({input: process.stdin});
  for await (const line of rl) {
    if (!line.trim()) continue;
    let answer;
    try {
      answer = await run(JSON.parse(line));
    } catch (e) {
      answer = {error: String(e && e.message || e)};
    }
    process.stdout.write(JSON.stringify(answer) + '\n');
  }
}

main();
