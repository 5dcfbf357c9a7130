// ndjson.mjs decodes gzip-compressed NDJSON files with Node's own zlib and
// JSON.parse, a reader that shares no code with daybook's Go encoder, and
// prints them for shared/devkit/parquetreaders (ReadNodeNDJSON) to compare.
//
//   node ndjson.mjs FILE...
//
// Output: one JSON array with, per file, {path, rows}; each row is an object
// of its keys, each value JSON.stringify of what JSON.parse made of it (a
// number as JavaScript's text of the double it parsed to).
import { readFileSync } from 'node:fs'
import { gunzipSync } from 'node:zlib'

const utf8 = new TextDecoder('utf-8', { fatal: true })

function read(path) {
  const text = utf8.decode(gunzipSync(readFileSync(path)))
  const lines = text.split('\n')
  if (lines.at(-1) !== '') throw new Error('the last line has no newline')
  const rows = lines.slice(0, -1).map((line, i) => {
    const v = JSON.parse(line)
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error(`line ${i + 1}: not an object`)
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, JSON.stringify(x)]))
  })
  return { path, rows }
}

const out = []
for (const path of process.argv.slice(2)) {
  try {
    out.push(read(path))
  } catch (err) {
    console.error(`ndjson: ${path}: ${err.stack ?? err}`)
    process.exit(1)
  }
}
process.stdout.write(JSON.stringify(out))
