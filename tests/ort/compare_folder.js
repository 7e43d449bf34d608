// compare_folder.js — how close predict_folder.js (jpeg-js, ONNX Runtime) comes to
// `petal-tui predict` on the same photos: the figures in tests/ort/README.md.
//
//   petal-tui predict MODEL.onnx PHOTOS... --top K > predict.csv     (K = every class)
//   node compare_folder.js MODEL.onnx predict.csv
//
// Prints the photos with the same top-1, the largest and mean |probability difference|
// over every class, and petal-tui's top-1 margin on each photo whose top-1 differs.
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');
const { classNames, pixels } = require('./predict_folder.js');

async function main() {
  const [model, csv] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model);
  const S = session.inputMetadata[0].shape[3], names = classNames(fs.readFileSync(model));
  const rows = fs.readFileSync(csv, 'utf8').trim().split('\n').slice(1).map((l) => l.split(','));
  let same = 0, worst = 0, sum = 0;
  const margins = [];
  for (const r of rows) {
    const want = names.map((n) => +r[r.indexOf(n, 2) + 1]); // class,probability pairs
    if (want.some(isNaN)) throw new Error(`${csv}: ${r[0]}: not every class (--top ${names.length})`);
    const out = await session.run({ image: new ort.Tensor('float32', pixels(r[0], S), [1, 3, S, S]) });
    const p = Array.from(out.probabilities.data), top = p.indexOf(Math.max(...p));
    if (top === +r[1]) same++;
    else margins.push((+r[3] - Math.max(...want.filter((_, c) => c !== +r[1]))).toFixed(3));
    p.forEach((v, c) => { worst = Math.max(worst, Math.abs(v - want[c])); sum += Math.abs(v - want[c]); });
  }
  console.log(`${rows.length} photos at ${S} px: the same top-1 on ${same} ` +
    `(${((100 * same) / rows.length).toFixed(2)}%); |probability difference| max ` +
    `${worst.toFixed(4)}, mean ${(sum / rows.length / names.length).toFixed(5)}`);
  if (margins.length) console.log(`petal-tui's top-1 margin where they differ: ${margins.join(' ')}`);
}

main().catch((err) => { console.error(`compare_folder: ${err.message}`); process.exit(1); });
