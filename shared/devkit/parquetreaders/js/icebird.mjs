// Reads an Iceberg table with icebird, an independent JavaScript reader, and
// prints one JSON line per row: {"id": <id column>, "at": <timestamp column, ms>}.
//
//   node icebird.mjs <s3 endpoint URL> <s3://bucket/table location> <id column> <timestamp column>
//
// Two shims, neither of the reader's logic: S3 URLs go to the local
// endpoint instead of AWS (icebird turns s3:// into https://<bucket>.s3.amazonaws.com),
// and icebird 0.3.1 decodes the Avro "deflate" codec as gzip, while the Avro
// specification's deflate is raw DEFLATE (RFC 1951), which iceberg-go writes:
// its avro reader's one import of the decoder is swapped for zlib's raw inflate.
import { register } from 'node:module'

register('data:text/javascript,' + encodeURIComponent(`
export async function load(url, context, next) {
  const r = await next(url, context)
  if (url.endsWith('/icebird/src/avro/avro.read.js')) {
    const src = String(r.source).replace("import { gunzip } from 'hyparquet-compressors'",
      "import { inflateRawSync } from 'node:zlib'\\nconst gunzip = d => new Uint8Array(inflateRawSync(d))")
    return { ...r, source: src, shortCircuit: true }
  }
  return r
}`))

const [endpoint, table, idColumn, atColumn] = process.argv.slice(2)
const real = globalThis.fetch
globalThis.fetch = (url, init) => {
  const m = /^https:\/\/([^/.]+)\.s3\.amazonaws\.com(\/.*)$/.exec(String(url))
  return real(m ? `${endpoint}/${m[1]}${m[2]}` : url, init)
}
const { icebergRead } = await import('icebird')
const rows = await icebergRead({ tableUrl: table })
for (const r of rows) {
  const v = r[atColumn]
  const at = v instanceof Date ? v.getTime() : Number(v) / 1000
  process.stdout.write(JSON.stringify({ id: r[idColumn], at }) + '\n')
}
