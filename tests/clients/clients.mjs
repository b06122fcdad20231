// Issue 20: the real npm clients (pinned in package-lock.json) against a
// real bertserve, each call's values checked against bertserve's own routes
// (/embed, /classify, /similarity) fetched directly. Run by test_clients.py:
//   node clients.mjs EMBED_URL RERANK_URL
// EMBED_URL serves a BERT with an MLM and a NEGATIVE/POSITIVE classifier,
// named "bert-tiny"; RERANK_URL a one-label cross-encoder whose
// config_sentence_transformers.json has the prompt "query" ("query: ").
import assert from "node:assert/strict";
import OpenAI from "openai";
import { OpenAIEmbeddings } from "@langchain/openai";
import { InferenceClient } from "@huggingface/inference";
import { CohereClient, CohereClientV2 } from "cohere-ai";

const [EMBED, RERANK] = process.argv.slice(2);
const TOL = 1e-5;
let checks = 0;

async function post(base, path, body) {
  const r = await fetch(base + path, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  });
  const text = await r.text();
  assert.equal(r.status, 200, `${path}: ${text}`);
  return JSON.parse(text);
}

function norm(v) { return Math.sqrt(v.reduce((s, x) => s + x * x, 0)); }
function unit(v) { const n = norm(v); return v.map((x) => x / n); }
function close(got, want, what) {
  assert.equal(got.length, want.length, `${what}: length`);
  const worst = Math.max(...got.map((x, i) => Math.abs(x - want[i])));
  assert.ok(worst <= TOL, `${what}: worst difference ${worst}`);
  checks++;
}
const sigmoid = (x) => 1 / (1 + Math.exp(-x));

async function openai() {
  const client = new OpenAI({ baseURL: EMBED + "/v1", apiKey: "unused" });
  const models = await client.models.list();
  assert.deepEqual(models.data.map((m) => m.id), ["bert-tiny"]);
  assert.equal((await client.models.retrieve("bert-tiny")).id, "bert-tiny");
  const texts = ["hello world", "The cat sat on the mat."];
  const raw = await post(EMBED, "/embed", { inputs: texts, normalize: false });
  // The SDK asks for base64 by default and decodes it.
  const out = await client.embeddings.create({ model: "text-embedding-3-small", input: texts });
  assert.equal(out.model, "bert-tiny");
  out.data.forEach((d, i) => {
    assert.ok(Math.abs(norm(d.embedding) - 1) < TOL, "unit length");
    close(d.embedding, unit(raw[i]), `openai embedding ${i}`);
  });
  const cut = await client.embeddings.create({ model: "m", input: texts, dimensions: 16,
                                               encoding_format: "float" });
  cut.data.forEach((d, i) => close(d.embedding, unit(raw[i].slice(0, 16)), `dimensions ${i}`));
  const toks = await post(EMBED, "/tokenize", { inputs: texts });
  const byIds = await client.embeddings.create({ model: "m", input: toks.map((t) => t.map((x) => x.id)) });
  byIds.data.forEach((d, i) => close(d.embedding, out.data[i].embedding, `token ids ${i}`));
  console.log("openai: models, embeddings (base64, float, dimensions, token ids) ok");
}

async function langchain() {
  const emb = new OpenAIEmbeddings({ model: "text-embedding-3-small", apiKey: "unused",
                                     configuration: { baseURL: EMBED + "/v1" } });
  // More than one of LangChain's batches of 512 (max_client_batch was 32).
  const docs = Array.from({ length: 600 }, (_, i) => `document number ${i} about cats`);
  const vecs = await emb.embedDocuments(docs);
  assert.equal(vecs.length, 600);
  const raw = await post(EMBED, "/embed", { inputs: [docs[0], docs[599]], normalize: false });
  close(vecs[0], unit(raw[0]), "langchain document 0");
  close(vecs[599], unit(raw[1]), "langchain document 599");
  const q = await emb.embedQuery("hello world");
  const rq = await post(EMBED, "/embed", { inputs: "hello world", normalize: false });
  close(q, unit(rq[0]), "langchain query");
  console.log("langchain: embedDocuments (600), embedQuery ok");
}

async function huggingface() {
  const hf = new InferenceClient();
  const cls = await hf.endpoint(EMBED + "/classify").textClassification({ inputs: "I loved it" });
  const want = (await post(EMBED, "/classify", { inputs: "I loved it" }))[0];
  assert.deepEqual(cls.map((x) => x.label), want.map((x) => x.label));
  close(cls.map((x) => x.score), want.map((x) => x.score), "textClassification");
  assert.ok(cls[0].score >= cls[1].score, "best label first");
  const pair = await hf.endpoint(EMBED + "/classify").textClassification({
    inputs: { text: "what is it?", text_pair: "a cat" } });
  const wantPair = (await post(EMBED, "/classify", { inputs: [["what is it?", "a cat"]] }))[0];
  close(pair.map((x) => x.score), wantPair.map((x) => x.score), "textClassification pair");
  const fe = await hf.endpoint(RERANK + "/embed").featureExtraction({ inputs: "hello",
                                                                       prompt_name: "query" });
  const wantFe = await post(RERANK, "/embed", { inputs: "query: hello", prompt: "" });
  close(fe.flat(), wantFe.flat(), "featureExtraction prompt_name");
  const sim = await hf.endpoint(EMBED + "/similarity").sentenceSimilarity({
    inputs: { source_sentence: "a cat", sentences: ["a cat", "stock markets"] } });
  const vecs = await post(EMBED, "/embed", { inputs: ["a cat", "a cat", "stock markets"] });
  const cos = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0) / (norm(a) * norm(b));
  close(sim, [cos(vecs[0], vecs[1]), cos(vecs[0], vecs[2])], "sentenceSimilarity");
  console.log("huggingface: textClassification (text, pair), featureExtraction, " +
              "sentenceSimilarity ok");
}

async function cohere() {
  const query = "Where is the Eiffel Tower?";
  const docs = ["Bananas are rich in potassium.", "The Eiffel Tower is in Paris.",
                "Paris is the capital of France."];
  const logits = (await post(RERANK, "/classify", { inputs: docs.map((d) => [query, d]),
                                                     raw_scores: true })).map((x) => x[0].score);
  const order = [...docs.keys()].sort((a, b) => logits[b] - logits[a] || a - b);
  const v1 = new CohereClient({ token: "unused", environment: RERANK });
  const r1 = await v1.rerank({ query, documents: docs, topN: 2, returnDocuments: true });
  assert.deepEqual(r1.results.map((r) => r.index), order.slice(0, 2));
  close(r1.results.map((r) => r.relevanceScore), order.slice(0, 2).map((i) => sigmoid(logits[i])),
        "cohere v1 rerank");
  assert.equal(r1.results[0].document.text, docs[order[0]]);
  assert.ok(r1.id && r1.meta.apiVersion.version === "1");
  const objects = docs.map((d, i) => ({ title: `doc ${i}`, text: d }));
  const rf = await v1.rerank({ query, documents: objects, rankFields: ["title", "text"],
                               maxChunksPerDoc: 2 });
  const fieldLogits = (await post(RERANK, "/classify", {
    inputs: objects.map((o) => [query, `title: ${o.title}\ntext: ${o.text}`]), raw_scores: true,
  })).map((x) => x[0].score);
  rf.results.forEach((r) => close([r.relevanceScore], [sigmoid(fieldLogits[r.index])],
                                  `cohere rank_fields ${r.index}`));
  const v2 = new CohereClientV2({ token: "unused", environment: RERANK });
  const r2 = await v2.rerank({ model: "rerank-v3.5", query, documents: docs, topN: 3,
                               maxTokensPerDoc: 512 });
  assert.deepEqual(r2.results.map((r) => r.index), order);
  close(r2.results.map((r) => r.relevanceScore), order.map((i) => sigmoid(logits[i])),
        "cohere v2 rerank");
  console.log("cohere: v1 rerank (topN, returnDocuments, rankFields, maxChunksPerDoc), " +
              "v2 rerank ok");
}

// Sentence-transformers' quantize_embeddings "ubinary": signs packed MSB first.
function packSigns(v) {
  const bytes = new Array(Math.ceil(v.length / 8)).fill(0);
  v.forEach((x, k) => { if (x > 0) bytes[k >> 3] |= 0x80 >> (k & 7); });
  return bytes;
}

async function cohereEmbed() {
  const texts = ["hello world", "The cat sat on the mat."];
  const raw = await post(EMBED, "/embed", { inputs: texts, normalize: false });
  const v1 = new CohereClient({ token: "unused", environment: EMBED });
  const e1 = await v1.embed({ texts, model: "embed-english-v3.0", inputType: "search_document" });
  assert.equal(e1.responseType, "embeddings_floats");
  assert.deepEqual(e1.texts, texts);
  e1.embeddings.forEach((e, i) => close(e, unit(raw[i]), `cohere v1 embed ${i}`));
  assert.equal(e1.meta.billedUnits.inputTokens,
               (await post(EMBED, "/tokenize", { inputs: texts })).flat().length);
  const typed = await v1.embed({ texts, embeddingTypes: ["float", "binary", "ubinary", "base64"] });
  assert.equal(typed.responseType, "embeddings_by_type");
  texts.forEach((_, i) => {
    const want = packSigns(raw[i]);
    assert.deepEqual(typed.embeddings.ubinary[i], want, `ubinary ${i}`);
    assert.deepEqual(typed.embeddings.binary[i], want.map((b) => b - 128), `binary ${i}`);
    const f32 = new Float32Array(new Uint8Array(Buffer.from(typed.embeddings.base64[i],
                                                            "base64")).buffer);
    close(Array.from(f32), typed.embeddings.float[i], `base64 ${i}`);
  });
  // v2 on the cross-encoder, whose checkpoint has the prompt "query": search_query uses it.
  const v2 = new CohereClientV2({ token: "unused", environment: RERANK });
  const e2 = await v2.embed({ texts: ["hello"], model: "embed-v4.0", inputType: "search_query",
                              embeddingTypes: ["float"], outputDimension: 16 });
  const prompted = await post(RERANK, "/embed", { inputs: "query: hello", prompt: "",
                                                  normalize: false });
  close(e2.embeddings.float[0], unit(prompted[0].slice(0, 16)), "cohere v2 embed search_query");
  const doc = await v2.embed({ texts: ["hello"], model: "m", inputType: "search_document",
                               embeddingTypes: ["float"] });
  const bare = await post(RERANK, "/embed", { inputs: "hello", normalize: false });
  close(doc.embeddings.float[0], unit(bare[0]), "cohere v2 embed search_document (no prompt)");
  console.log("cohere: v1 embed (floats, by type: binary, ubinary, base64), " +
              "v2 embed (input_type prompt, output_dimension) ok");
}

for (const [name, run] of [["openai", openai], ["langchain", langchain],
                           ["huggingface", huggingface], ["cohere", cohere],
                           ["cohere embed", cohereEmbed]]) {
  try {
    await run();
  } catch (e) {
    console.error(`${name}: FAILED: ${e.stack || e}`);
    process.exitCode = 1;
  }
}
console.log(`${checks} value checks`);
