// Summarises a cache-tests results file the way the suite classifies each result (its
// results.mjs, dependencies honoured as cache-tests.fyi shows them, and ignored), with the raw
// count of passed tests. Run from anywhere; the suite's checkout is the first argument.
//   node summarize.mjs SUITE_DIR results.json [--ids]
import fs from 'fs'
import path from 'path'
import { pathToFileURL } from 'url'

const [suite, file] = process.argv.slice(2)
const { default: tests } = await import(pathToFileURL(path.join(suite, 'tests/index.mjs')))
const { determineTestResult, resultTypes } = await import(pathToFileURL(path.join(suite, 'test-engine/lib/results.mjs')))

const results = JSON.parse(fs.readFileSync(file, 'utf8'))
const names = new Map(Object.entries(resultTypes).map(([k, v]) => [v, k]))
const byKind = {}
const byKindAlone = {}
const ids = {}
let passed = 0; let total = 0; let setup = 0; let harness = 0; let retry = 0
for (const [id, result] of Object.entries(results)) {
  total++
  if (result === true) passed++
  else if (result[0] === 'Setup') { if (result[1] === 'retry') retry++; else setup++ }
  else if (result[0] !== 'Assertion') harness++
  const kind = names.get(determineTestResult(tests, id, results, true))
  byKind[kind] = (byKind[kind] || 0) + 1
  const alone = names.get(determineTestResult(tests, id, results, false))
  byKindAlone[alone] = (byKindAlone[alone] || 0) + 1;
  (ids[alone] = ids[alone] || []).push(id)
}
const failed = total - passed
console.log(`${file}: passed ${passed}/${total}, failed ${failed} (assertion ${failed - setup - harness - retry}, setup ${setup}, retry ${retry}, harness or other error ${harness})`)
console.log('  by kind, dependencies honoured (as cache-tests.fyi): ' + JSON.stringify(byKind))
console.log('  by kind, each test alone:                           ' + JSON.stringify(byKindAlone))
if (process.argv.includes('--ids')) {
  for (const [kind, list] of Object.entries(ids)) if (kind !== 'pass') console.log(`  ${kind}: ${list.sort().join(' ')}`)
}
