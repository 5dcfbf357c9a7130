// read.mjs decodes Parquet files with hyparquet, a JavaScript reader that
// shares no code with the Go and C++ ones, and prints them for
// shared/devkit/parquetreaders (ReadHyparquet) to compare.
//
//   node read.mjs FILE...
//
// Output: one JSON array with, per file, {path, columns, rows}. columns hold
// name, physical, logical and repetition from the file's schema; rows hold
// every value as canonical text (see the Go package) or null. Doubles are
// JavaScript's text ("NaN", "Infinity", "-0" ...), which the Go side parses.
// Decimals are read as their stored unscaled integers and scaled here with
// BigInt: hyparquet itself converts decimals to lossy JavaScript numbers.
// A list column (a three-level LIST group) is described by its group, its
// logical type "LIST of " and the element's, as the Go package's comment
// says, and each list value is a JSON array of its elements' texts (null
// for a NULL element), which the Go side spells canonically.
import { asyncBufferFromFile, parquetMetadataAsync, parquetRead, parquetSchema } from 'hyparquet'
import { compressors } from 'hyparquet-compressors'

const utf8 = new TextDecoder('utf-8', { fatal: true })

// Parsers for the logical types, so values stay exact.
const parsers = {
  dateFromDays: days => String(days),
  timestampFromMicroseconds: micros => String(micros),
  timestampFromMilliseconds: millis => `unexpected millis ${millis}`,
  timestampFromNanoseconds: nanos => `unexpected nanos ${nanos}`,
  stringFromBytes: bytes => bytes && utf8.decode(bytes),
  jsonFromBytes: bytes => bytes && utf8.decode(bytes),
}

function logicalName(e) {
  const lt = e.logical_type
  if (!lt) return ''
  switch (lt.type) {
    case 'STRING': case 'JSON': case 'DATE':
      return lt.type
    case 'DECIMAL':
      return `DECIMAL(${lt.precision},${lt.scale})`
    case 'TIMESTAMP':
      return `TIMESTAMP(${lt.unit},${lt.isAdjustedToUTC ? 'UTC' : 'LOCAL'})`
    case 'INTEGER':
      return `INTEGER(${lt.bitWidth},${lt.isSigned ? 'signed' : 'unsigned'})`
  }
  return 'other:' + JSON.stringify(lt, (k, v) => typeof v === 'bigint' ? String(v) : v)
}

// unscaled returns the stored integer of a decimal: INT32, INT64, or
// big-endian two's complement bytes.
function unscaled(v) {
  if (typeof v === 'number' || typeof v === 'bigint') return BigInt(v)
  if (v instanceof Uint8Array) {
    let n = 0n
    for (const b of v) n = (n << 8n) | BigInt(b)
    if (v.length && v[0] & 0x80) n -= 1n << BigInt(8 * v.length)
    return n
  }
  throw new Error(`decimal stored as ${typeof v}`)
}

function decimalText(n, scale) {
  const neg = n < 0n
  let digits = (neg ? -n : n).toString()
  if (scale > 0) {
    digits = digits.padStart(scale + 1, '0')
    digits = digits.slice(0, digits.length - scale) + '.' + digits.slice(digits.length - scale)
  }
  return (neg ? '-' : '') + digits
}

function leafColumn(e) {
  return {
    name: e.name,
    physical: e.type === 'FIXED_LEN_BYTE_ARRAY' ? `${e.type}(${e.type_length})` : e.type,
    logical: logicalName(e),
    repetition: e.repetition_type,
  }
}

// column describes a top-level schema node; leaf is its leaf's element, elem
// (for a list) the leaf's own description.
function column(node) {
  const e = node.element
  if (!node.children.length) return { col: leafColumn(e), leaf: e }
  const rep = node.children[0]
  const col = { name: e.name, repetition: e.repetition_type, physical: '', logical: '' }
  const isList = e.logical_type?.type === 'LIST' || e.converted_type === 'LIST'
  if (!isList || node.children.length !== 1 || rep.element.repetition_type !== 'REPEATED' ||
      rep.children.length !== 1 || rep.children[0].children.length) {
    col.logical = 'other:group ' + (e.logical_type?.type ?? e.converted_type ?? '')
    return { col, leaf: e }
  }
  const leaf = rep.children[0].element
  const elem = leafColumn(leaf)
  col.physical = elem.physical
  col.logical = `LIST of ${elem.repetition === 'OPTIONAL' ? '' : 'REQUIRED '}${elem.logical || elem.physical}`
  return { col, leaf, elem }
}

function text(v, col, e, elem) {
  if (v === null || v === undefined) return null
  if (elem) {
    if (!Array.isArray(v)) throw new Error(`column ${col.name}: a list read as ${typeof v}`)
    return v.map(x => text(x, elem, e))
  }
  if (col.logical.startsWith('DECIMAL')) return decimalText(unscaled(v), e.scale ?? e.logical_type.scale)
  if (v instanceof Uint8Array) return Buffer.from(v).toString('hex') // binary
  switch (typeof v) {
    case 'string': return v
    case 'bigint': return v.toString()
    case 'boolean': return String(v)
    case 'number':
      if (col.physical === 'DOUBLE' && Object.is(v, -0)) return '-0'
      return String(v)
  }
  throw new Error(`column ${col.name}: unexpected ${Object.prototype.toString.call(v)}`)
}

async function read(path) {
  const file = await asyncBufferFromFile(path)
  const metadata = await parquetMetadataAsync(file)
  const tops = parquetSchema(metadata).children.map(column)
  const columns = tops.map(t => t.col)
  // Read decimals as their stored integers: drop the annotation from a copy
  // of the metadata (the reader still decodes every page of the column).
  const raw = structuredClone(metadata)
  for (const e of raw.schema) {
    if (e.logical_type?.type === 'DECIMAL' || e.converted_type === 'DECIMAL') {
      delete e.logical_type
      delete e.converted_type
    }
  }
  let rows = []
  await parquetRead({
    // utf8: false keeps a byte array without annotation (binary) as bytes.
    file, metadata: raw, compressors: { ZSTD: compressors.ZSTD }, parsers, utf8: false,
    rowFormat: 'array', onComplete: r => { rows = r },
  })
  return {
    path,
    columns,
    rows: rows.map(row => row.map((v, i) => text(v, columns[i], tops[i].leaf, tops[i].elem))),
  }
}

const out = []
for (const path of process.argv.slice(2)) {
  try {
    out.push(await read(path))
  } catch (err) {
    console.error(`hyparquet: ${path}: ${err.stack ?? err}`)
    process.exit(1)
  }
}
process.stdout.write(JSON.stringify(out))
