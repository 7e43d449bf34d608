// predict_folder.js — the classes of a folder of JPEG photos by ONNX Runtime, on a
// model written by `petal-tui export`: the same answers as `petal-tui predict`.
//
//   node predict_folder.js MODEL.onnx FOLDER      prints file,class,probability lines
//
// The image size is the model's input shape [N, 3, S, S]. The class names are in the
// file's metadata_props ("class_names", a JSON array), which onnxruntime-node does not
// expose: they are read from the file's bytes. Photos are made as petal-tui makes them
// (centre crop to a square, then its triangle-filter resize to S) and fed as RGB 0-255.
// Pixels differ from petal-tui's by about a level (jpeg-js is not libjpeg-turbo; see
// shrink): tests/ort/README.md says how often answers do.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const jpeg = require('jpeg-js');

// metadata_props entry { key: "class_names" (field 1), value: JSON (field 2) }.
function classNames(buf) {
  const key = Buffer.from('\x0a\x0bclass_names\x12', 'latin1');
  let i = buf.lastIndexOf(key), len = 0;
  if (i < 0) throw new Error('no class_names in its metadata: not a petal-tui export');
  i += key.length;
  for (let shift = 0, b = 0x80; b & 0x80; shift += 7) len += ((b = buf[i++]) & 0x7f) * 2 ** shift;
  return JSON.parse(buf.toString('utf8', i, i + len));
}

// petal-tui's img_resize (core/data/image.c), one axis: a triangle filter whose
// support widens with the downscale, its weights as float32.
function taps(nIn, nOut) {
  const scale = nIn / nOut, support = Math.max(scale, 1), out = [];
  for (let o = 0; o < nOut; o++) {
    const center = (o + 0.5) * scale, t = [];
    let lo = Math.max(0, Math.trunc(center - support + 0.5));
    let hi = Math.min(nIn, Math.trunc(center + support + 0.5));
    if (hi <= lo) hi = (lo = Math.min(Math.trunc(center), nIn - 1)) + 1;
    for (let i = lo; i < hi; i++) t.push(Math.max(0, 1 - Math.abs((i + 0.5 - center) / support)));
    const sum = t.reduce((a, b) => a + b, 0);
    out.push({ lo, w: t.map((v) => Math.fround(sum > 0 ? Math.fround(v) / sum : 1 / t.length)) });
  }
  return out;
}

// libjpeg-turbo, under petal-tui, shrinks by num/8 while decoding (the smallest factor
// that leaves the centred square at least S a side); jpeg-js cannot, so its full-size
// image is area-averaged to that size instead.
function shrink(img, S) {
  const { width: w, height: h, data } = img;
  let num = 1;
  while (num < 8 && Math.floor((Math.min(w, h) * num) / 8) < S) num++;
  if (num === 8) return img;
  const dw = Math.ceil((w * num) / 8), dh = Math.ceil((h * num) / 8), r = 8 / num;
  const cover = (o, n) => { // source pixels under output pixel o, with their overlap
    const a = o * r, b = Math.min((o + 1) * r, n), c = [];
    for (let i = Math.floor(a); i < b; i++) c.push([i, Math.min(i + 1, b) - Math.max(i, a)]);
    return c;
  };
  const out = new Uint8Array(dw * dh * 4);
  for (let y = 0; y < dh; y++)
    for (let x = 0; x < dw; x++)
      for (let c = 0; c < 3; c++) {
        let s = 0, t = 0;
        for (const [yy, wy] of cover(y, h))
          for (const [xx, wx] of cover(x, w)) { s += wy * wx * data[(yy * w + xx) * 4 + c]; t += wy * wx; }
        out[(y * dw + x) * 4 + c] = Math.round(s / t);
      }
  return { width: dw, height: dh, data: out };
}

// A photo as the model's input: its centred square (mapped into the shrunk image as
// petal-tui maps it) resized to S x S, summed in float32 as petal-tui sums, rows
// first; CHW floats 0-255.
function pixels(file, S) {
  const full = jpeg.decode(fs.readFileSync(file), { useTArray: true });
  const { width: dw, height: dh, data } = shrink(full, S);
  const side = Math.min(full.width, full.height), x = new Float32Array(3 * S * S);
  const sx = Math.floor((((full.width - side) >> 1) * dw) / full.width);
  const sy = Math.floor((((full.height - side) >> 1) * dh) / full.height);
  const tx = taps(Math.floor((side * dw) / full.width), S);
  const ty = taps(Math.floor((side * dh) / full.height), S);
  const rows = new Float32Array(dh * S * 3);
  for (let y = sy; y < dh; y++)
    for (let o = 0; o < S; o++)
      for (let c = 0; c < 3; c++) {
        let s = 0;
        tx[o].w.forEach((wk, k) => { s = Math.fround(s + Math.fround(wk * data[(y * dw + sx + tx[o].lo + k) * 4 + c])); });
        rows[(y * S + o) * 3 + c] = s;
      }
  for (let o = 0; o < S; o++)
    for (let q = 0; q < S * 3; q++) {
      let s = 0;
      ty[o].w.forEach((wk, k) => { s = Math.fround(s + Math.fround(wk * rows[(sy + ty[o].lo + k) * S * 3 + q])); });
      x[(q % 3) * S * S + o * S + ((q / 3) | 0)] = Math.min(255, Math.max(0, Math.trunc(Math.fround(s + 0.5))));
    }
  return x;
}

// The JPEGs under dir, sorted, folders walked as petal-tui predict walks them.
function jpegs(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))
    .flatMap((e) => (e.isDirectory() ? jpegs(path.join(dir, e.name))
      : /\.jpe?g$/i.test(e.name) ? [path.join(dir, e.name)] : []));
}

async function main() {
  const [model, folder] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model);
  const S = session.inputMetadata[0].shape[3], names = classNames(fs.readFileSync(model));
  for (const file of jpegs(folder)) {
    const x = pixels(file, S);
    const out = await session.run({ image: new ort.Tensor('float32', x, [1, 3, S, S]) });
    const p = out.probabilities.data, top = p.indexOf(Math.max(...p));
    console.log(`${file},${names[top]},${p[top].toFixed(6)}`);
  }
}

if (require.main === module)
  main().catch((err) => { console.error(`predict_folder: ${err.message}`); process.exit(1); });
module.exports = { classNames, pixels }; // for compare_folder.js
