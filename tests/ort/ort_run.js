// ort_run.js — runs an ONNX model with ONNX Runtime on raw float32 input: the
// independent check of what `petal-tui export` writes (tests/test_ort.c, make
// conformance) and the peer of bench/bench_predict.sh.
//
//   node ort_run.js MODEL.onnx INPUT.f32 N,C,H,W OUT_DIR [--threads T] [--repeat R]
//                   [--opt all|extended|basic|disabled]
//
// INPUT.f32 holds N*C*H*W little-endian float32 values. Every output of the model is
// written to OUT_DIR/NAME.f32 the same way; stdout gets one JSON line: each output's
// dims, ONNX Runtime's version and, with --repeat R, the seconds of the fastest of R
// runs (after one warm-up run). Graph optimisations are all on (the runtime's best
// setting; --opt chooses another level: 'disabled' runs an int8 QDQ file's
// QuantizeLinear / DequantizeLinear nodes as ONNX defines them, in float, where 'all'
// fuses them into int8 kernels) and intra-op threads are T (default 1), inter-op 1.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

function usage(msg) {
  process.stderr.write(`ort_run: ${msg}\nusage: node ort_run.js MODEL.onnx INPUT.f32 N,C,H,W OUT_DIR [--threads T] [--repeat R] [--opt LEVEL]\n`);
  process.exit(1);
}

async function main() {
  const a = process.argv.slice(2);
  if (a.length < 4) usage('four arguments needed');
  const [model, input, shapeText, outDir] = a;
  let threads = 1, repeat = 0, opt = 'all';
  for (let i = 4; i < a.length; i += 2) {
    if (a[i] === '--threads') threads = parseInt(a[i + 1], 10);
    else if (a[i] === '--repeat') repeat = parseInt(a[i + 1], 10);
    else if (a[i] === '--opt' && ['all', 'extended', 'basic', 'disabled'].includes(a[i + 1])) opt = a[i + 1];
    else usage(`unknown option ${a[i]}`);
  }
  const dims = shapeText.split(',').map((s) => parseInt(s, 10));
  if (dims.length !== 4 || dims.some((d) => !(d > 0))) usage(`bad shape ${shapeText}`);
  const buf = fs.readFileSync(input);
  const count = dims.reduce((x, y) => x * y, 1);
  if (buf.length !== count * 4) usage(`${input} holds ${buf.length} bytes, the shape needs ${count * 4}`);
  const data = new Float32Array(count);
  for (let i = 0; i < count; i++) data[i] = buf.readFloatLE(i * 4);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: threads, interOpNumThreads: 1,
    graphOptimizationLevel: opt, executionMode: 'sequential',
  });
  const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', data, dims) };
  let results = await session.run(feeds);
  let best = null;
  for (let r = 0; r < repeat; r++) {
    const t0 = process.hrtime.bigint();
    results = await session.run(feeds);
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    if (best === null || s < best) best = s;
  }
  fs.mkdirSync(outDir, { recursive: true });
  const outputs = {};
  for (const name of session.outputNames) {
    const t = results[name];
    const out = Buffer.alloc(t.data.length * 4);
    for (let i = 0; i < t.data.length; i++) out.writeFloatLE(t.data[i], i * 4);
    fs.writeFileSync(path.join(outDir, `${name}.f32`), out);
    outputs[name] = t.dims;
  }
  const version = require('onnxruntime-node/package.json').version;
  console.log(JSON.stringify({ ort: version, threads, opt, outputs, seconds: best }));
}

main().catch((err) => {
  process.stderr.write(`ort_run: ${err && err.message ? err.message : err}\n`);
  process.exit(2);
});
