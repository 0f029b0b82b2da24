#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
'use strict'
// Does speedscope accept this file, and what does it see in it?
//
//   node check.js [--no-browser] [--timeout=MS] FILE
//
// (a) validates FILE against the JSON schema shipped in the npm `speedscope`
//     package, plus the few rules its importer relies on that a schema
//     cannot say (frame indices in range, one weight per sample);
// (b) opens FILE in speedscope's own built app (dist/release/index.html)
//     in Debian's headless Chromium, the way `speedscope FILE` does
//     (#localProfilePath= naming a script that hands over the file), waits
//     for the import, and asks the app to export what it imported.
//
// Prints one JSON line: {"file", "accepted", "schema": {...},
// "speedscope": {"outcome", "error", "name", "profiles": [{name, unit,
// totalWeight, frames, firstAt, lastAt}]}}.
// Exit status: 0 accepted, 1 rejected, 2 usage or environment problem.

const fs = require('fs')
const os = require('os')
const path = require('path')

const SPEEDSCOPE_DIR = path.dirname(require.resolve('speedscope/package.json'))
const RELEASE_DIR = path.join(SPEEDSCOPE_DIR, 'dist', 'release')
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium'
// No network, no profile state: the check must see only speedscope and FILE.
const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
]

function parseArgs(argv) {
  const opts = { browser: true, timeout: 60000, file: null }
  for (const arg of argv) {
    if (arg === '--no-browser') opts.browser = false
    else if (arg.startsWith('--timeout=')) opts.timeout = Number(arg.slice(10))
    else if (!arg.startsWith('--') && !opts.file) opts.file = arg
    else return null
  }
  return opts.file && opts.timeout > 0 ? opts : null
}

// (a) The schema, then the importer's unwritten rules.
function checkSchema(data) {
  const Ajv = require('ajv')
  const schema = JSON.parse(fs.readFileSync(path.join(RELEASE_DIR, 'file-format-schema.json'), 'utf8'))
  const ajv = new Ajv({ allErrors: true, strict: false })
  const validate = ajv.compile(schema)
  const errors = []
  if (!validate(data)) {
    for (const e of validate.errors.slice(0, 20)) errors.push(`${e.instancePath || '/'} ${e.message}`)
  }
  return errors.concat(importerRules(data))
}

function importerRules(data) {
  const errors = []
  const nframes = (data && data.shared && Array.isArray(data.shared.frames)) ? data.shared.frames.length : 0
  const badIndex = i => !Number.isInteger(i) || i < 0 || i >= nframes
  for (const [pi, prof] of ((data && Array.isArray(data.profiles)) ? data.profiles : []).entries()) {
    if (!prof || prof.type !== 'sampled' || !Array.isArray(prof.samples)) continue
    if (!Array.isArray(prof.weights) || prof.weights.length !== prof.samples.length)
      errors.push(`/profiles/${pi}: samples and weights differ in length`)
    const bad = prof.samples.findIndex(s => Array.isArray(s) && s.some(badIndex))
    if (bad >= 0) errors.push(`/profiles/${pi}/samples/${bad}: frame index out of range (${nframes} frames)`)
  }
  return errors
}

// (b) The real app. Returns { outcome, error, name, profiles }.
async function importInApp(file, timeoutMs) { const T0=Date.now(); const T=(l)=>console.error(l, Date.now()-T0)
  const { chromium } = require('playwright-core')
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpfprof-speedscope-'))
  const loader = path.join(work, 'load-profile.js')
  const base64 = fs.readFileSync(file).toString('base64')
  fs.writeFileSync(loader, `speedscope.loadFileFromBase64(${JSON.stringify(path.basename(file))}, ${JSON.stringify(base64)})`)

  T('pre-launch'); const context = await chromium.launchPersistentContext(path.join(work, 'user-data'), {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    acceptDownloads: true,
  })
  try {
    T('launched'); const page = context.pages()[0] || await context.newPage()
    const seen = { error: null, alert: null }
    page.on('console', async msg => {
      // speedscope logs its importer's exception after this text.
      if (!msg.text().startsWith('Failed to load format')) return
      seen.error = msg.text()
      const exception = msg.args()[1]
      if (exception) {
        seen.error = await exception.evaluate(e => String(e && e.message || e)).catch(() => seen.error)
      }
    })
    page.on('pageerror', err => { if (!seen.error) seen.error = String(err) })
    page.on('dialog', dialog => { seen.alert = dialog.message(); dialog.dismiss().catch(() => {}) })

    await page.goto(`file://${path.join(RELEASE_DIR, 'index.html')}#localProfilePath=${loader}`)
    T('goto'); const outcome = await waitForImport(page, seen, timeoutMs); T('imported')
    const result = { outcome, error: seen.error || seen.alert || null, name: null, profiles: [] }
    if (outcome !== 'imported') return result
    result.name = (await page.title()).replace(/ - speedscope$/, '')
    const ex = await exportFromApp(page, timeoutMs); T('export'); result.profiles = summarize(ex)
    return result
  } finally {
    T('pre-close'); await context.close().catch(() => {}); T('closed')
    fs.rmSync(work, { recursive: true, force: true })
  }
}

// speedscope retitles the page "<name> - speedscope" once the import is done.
async function waitForImport(page, seen, timeoutMs) {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (seen.alert) return 'alert'
    const state = await page.evaluate(() => ({
      title: document.title,
      failed: document.body ? document.body.innerText.includes('Something went wrong') : false,
    })).catch(() => ({}))
    if (state.failed || seen.error) {
      await page.waitForTimeout(200) // let the console handler fetch the exception
      return 'import-error'
    }
    if (state.title && state.title.endsWith(' - speedscope')) return 'imported'
    await page.waitForTimeout(100)
  }
  return 'timeout'
}

// Ctrl+S makes speedscope serialize the profiles it holds and download them.
async function exportFromApp(page, timeoutMs) {
  const [download] = await Promise.all([
    page.waitForEvent('download', { timeout: timeoutMs }),
    page.keyboard.press('Control+s'),
  ])
  return JSON.parse(fs.readFileSync(await download.path(), 'utf8'))
}

// The export is evented: walk each profile's open/close events.
function summarize(exported) {
  return exported.profiles.map(prof => {
    const frames = new Set()
    let firstAt = null
    let lastAt = null
    for (const ev of prof.events || []) {
      frames.add(ev.frame)
      if (firstAt === null) firstAt = ev.at
      lastAt = ev.at
    }
    return {
      name: prof.name,
      unit: prof.unit,
      totalWeight: prof.endValue - prof.startValue,
      frames: frames.size,
      firstAt,
      lastAt,
    }
  })
}

async function main() {
  const opts = parseArgs(process.argv.slice(2))
  if (!opts) {
    console.error('usage: node check.js [--no-browser] [--timeout=MS] FILE')
    return 2
  }
  const report = { file: opts.file, accepted: false, schema: null, speedscope: null }
  let text
  try {
    text = fs.readFileSync(opts.file, 'utf8')
  } catch (e) {
    console.error(`cannot read ${opts.file}: ${e.message}`)
    return 2
  }
  try {
    const errors = checkSchema(JSON.parse(text))
    report.schema = { valid: errors.length === 0, errors }
  } catch (e) {
    report.schema = { valid: false, errors: [`not JSON: ${e.message}`] }
  }
  if (opts.browser) {
    report.speedscope = {
      version: require('speedscope/package.json').version,
      ...await importInApp(opts.file, opts.timeout),
    }
  }
  report.accepted = report.schema.valid &&
    (!report.speedscope || report.speedscope.outcome === 'imported')
  console.log(JSON.stringify(report))
  return report.accepted ? 0 : 1
}

main().then(code => { process.exitCode = code }, err => {
  console.log(JSON.stringify({ accepted: false, internalError: String(err && err.stack || err) }))
  process.exitCode = 2
})
