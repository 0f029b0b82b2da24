#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
'use strict'
// Does speedscope accept these files, and what does it see in them?
//
//   node check.js [--no-browser] [--timeout=MS] FILE|DIR [FILE|DIR...]
//
// A DIR stands for every *.json file directly in it, sorted by name.
// For each FILE, in argument order:
// (a) validates FILE against the JSON schema shipped in the npm `speedscope`
//     package, plus the few rules its importer relies on that a schema
//     cannot say (frame indices in range, one weight per sample);
// (b) opens FILE in speedscope's own built app (dist/release/index.html)
//     in Debian's headless Chromium, the way `speedscope FILE` does
//     (#localProfilePath= naming a script that hands over the file), waits
//     for the import, and asks the app to export what it imported.
// One Chromium serves all files; each file gets a fresh browser context
// (its own page, storage and downloads), closed before the next file is
// opened, so files cannot affect each other. No fixed sleeps: the check
// waits on the app's own signals (console.timeEnd("import"), its importer's
// error, alerts), and overlaps the node-side work (schema, reading the
// export, making the next blank context) with the app's import.
//
// Prints one JSON line per file: {"file", "accepted", "schema": {...},
// "speedscope": {"outcome", "error", "name", "profiles": [{name, unit,
// totalWeight, frames, firstAt, lastAt}]}}; a file that could not be
// checked at all gets "internalError" instead.
// Exit status: 0 all accepted, 1 some rejected, 2 usage or environment
// problem (including a file that could not be read or checked).
//
// --timeout=MS bounds each wait per file (the import, then the export);
// the default is 60000. "--" ends the options.

const fs = require('fs')
const os = require('os')
const path = require('path')

const USAGE = 'usage: node check.js [--no-browser] [--timeout=MS] FILE|DIR [FILE|DIR...]'
const SPEEDSCOPE_DIR = path.dirname(require.resolve('speedscope/package.json'))
const SPEEDSCOPE_VERSION = require('speedscope/package.json').version
const RELEASE_DIR = path.join(SPEEDSCOPE_DIR, 'dist', 'release')
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium'
// No network, no profile state: the check must see only speedscope and FILE.
const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  // speedscope needs WebGL (without it the app drops the file silently and
  // the check would only time out); with no GPU that is SwiftShader, whose
  // implicit fallback Chromium has deprecated.
  '--enable-unsafe-swiftshader',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
]

class UsageError extends Error {}

function parseArgs(argv) {
  const opts = { browser: true, timeout: 60000, paths: [] }
  let onlyPaths = false
  for (const arg of argv) {
    if (onlyPaths || !arg.startsWith('--')) opts.paths.push(arg)
    else if (arg === '--') onlyPaths = true
    else if (arg === '--no-browser') opts.browser = false
    else if (arg.startsWith('--timeout=')) opts.timeout = Number(arg.slice(10))
    else return null
  }
  return opts.paths.length && Number.isFinite(opts.timeout) && opts.timeout > 0 ? opts : null
}

// FILE stays as given; DIR becomes its *.json files, sorted (by code unit,
// so the order does not depend on the locale).
function expandPaths(paths) {
  const files = []
  for (const p of paths) {
    let st
    try {
      st = fs.statSync(p)
    } catch (e) {
      throw new UsageError(`cannot read ${p}: ${e.message}`)
    }
    if (!st.isDirectory()) {
      files.push(p)
      continue
    }
    const names = fs.readdirSync(p)
      .filter(n => n.endsWith('.json'))
      .filter(n => { try { return fs.statSync(path.join(p, n)).isFile() } catch { return false } })
      .sort()
    if (!names.length) throw new UsageError(`${p}: no *.json files in this directory`)
    for (const n of names) files.push(path.join(p, n))
  }
  return files
}

// (a) The schema, then the importer's unwritten rules.
let validateSchema = null
function checkSchema(data) {
  if (!validateSchema) {
    const Ajv = require('ajv')
    const schema = JSON.parse(fs.readFileSync(path.join(RELEASE_DIR, 'file-format-schema.json'), 'utf8'))
    validateSchema = new Ajv({ allErrors: true, strict: false }).compile(schema)
  }
  const errors = []
  if (!validateSchema(data)) {
    for (const e of validateSchema.errors.slice(0, 20)) errors.push(`${e.instancePath || '/'} ${e.message}`)
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

function schemaReport(text) {
  try {
    const errors = checkSchema(JSON.parse(text))
    return { valid: errors.length === 0, errors }
  } catch (e) {
    return { valid: false, errors: [`not JSON: ${e.message}`] }
  }
}

// (b) The real app, one Chromium for all files.
class App {
  constructor(timeoutMs) {
    this.timeoutMs = timeoutMs
    this.browser = null
    this.launching = null
    this.spare = null
    this.work = fs.mkdtempSync(path.join(os.tmpdir(), 'ebpfprof-speedscope-'))
    this.count = 0
  }

  async ensureBrowser() {
    if (this.browser && this.browser.isConnected()) return
    if (!this.launching) {
      const { chromium } = require('playwright-core')
      // launch() gives the browser a throwaway profile directory of its own.
      this.launching = chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS })
        .then(browser => { this.browser = browser }).finally(() => { this.launching = null })
    }
    await this.launching
  }

  // A fresh browser context (storage, cache, downloads of its own) and its page.
  async newPage() {
    await this.ensureBrowser()
    const context = await this.browser.newContext({ acceptDownloads: true })
    try {
      return { context, page: await context.newPage() }
    } catch (e) {
      await context.close().catch(() => {})
      throw e
    }
  }

  async close() {
    if (this.spare) await this.spare.then(({ context }) => context.close(), () => {}).catch(() => {})
    if (this.browser) await this.browser.close().catch(() => {})
    fs.rmSync(this.work, { recursive: true, force: true })
  }

  // Opens FILE in a fresh context and starts the import; the app works on
  // it while the caller does other things. Returns a handle for finish().
  // With more, a fresh context for the next file is made meanwhile.
  async start(file, bytes, more) {
    const loader = path.join(this.work, `load-profile-${this.count++}.js`)
    fs.writeFileSync(loader, `speedscope.loadFileFromBase64(${JSON.stringify(path.basename(file))}, ${JSON.stringify(bytes.toString('base64'))})`)
    const fresh = this.spare || this.newPage()
    this.spare = null
    let context = null
    try {
      let page
      ({ context, page } = await fresh)
      const imported = watchImport(page, this.timeoutMs)
      await page.goto(`file://${path.join(RELEASE_DIR, 'index.html')}#localProfilePath=${loader}`, {
        waitUntil: 'commit', timeout: this.timeoutMs,
      })
      if (more) {
        this.spare = this.newPage()
        this.spare.catch(() => {}) // reported when start() uses it
      }
      return { context, page, loader, imported }
    } catch (e) {
      if (context) await context.close().catch(() => {})
      fs.rmSync(loader, { force: true })
      throw e
    }
  }

  // Waits for the import, then exports. Returns { outcome, error, name,
  // exported }: exported is the text of speedscope's export, to summarize().
  async finish({ context, page, loader, imported }) {
    try {
      const { outcome, error } = await imported
      const result = { outcome, error: error || null, name: null, exported: null }
      if (outcome !== 'imported') return result
      // The import signal comes just before the app stores the profiles and
      // shows them; wait until it does (the view tabs only exist with a profile).
      const shown = await page.waitForFunction(
        () => document.title.endsWith(' - speedscope') && document.body.textContent.includes('Left Heavy'),
        null, { timeout: this.timeoutMs }).then(() => true, () => false)
      if (!shown) return { ...result, outcome: 'timeout', error: 'import finished but the profile was not shown' }
      result.name = (await page.title()).replace(/ - speedscope$/, '')
      result.exported = await exportFromApp(page, this.timeoutMs)
      return result
    } finally {
      await context.close().catch(() => {})
      fs.rmSync(loader, { force: true })
    }
  }
}

// Resolves with the first of speedscope's own signals: console.timeEnd("import")
// once the import is done, "Failed to load format" with the importer's
// exception, an alert (unrecognized format or empty profile), an uncaught
// error, the renderer crashing, or nothing before the timeout (or the page
// closing).
function watchImport(page, timeoutMs) {
  return new Promise(resolve => {
    let done = false
    const settle = (outcome, error) => {
      if (done) return
      done = true
      clearTimeout(timer)
      resolve({ outcome, error })
    }
    // setImmediate: if node was busy (schema, the previous export), a signal
    // that arrived in time is read before the timeout is called.
    const timer = setTimeout(() => setImmediate(() => settle('timeout', null)), timeoutMs)
    page.on('console', async msg => {
      if (done) return
      const text = msg.text()
      if (msg.type() === 'timeEnd' && text.startsWith('import:')) return settle('imported', null)
      // speedscope logs its importer's exception after this text.
      if (!text.startsWith('Failed to load format')) return
      let error = text
      const exception = msg.args()[1]
      if (exception) error = await exception.evaluate(e => String(e && e.message || e)).catch(() => text)
      settle('import-error', error)
    })
    page.on('pageerror', err => settle('import-error', String(err)))
    page.on('dialog', dialog => { settle('alert', dialog.message()); dialog.dismiss().catch(() => {}) })
    page.on('crash', () => settle('crash', 'the page crashed'))
    page.on('close', () => settle('timeout', 'the page was closed'))
  })
}

// Ctrl+S makes speedscope serialize the profiles it holds and download them.
async function exportFromApp(page, timeoutMs) {
  const [download] = await Promise.all([
    page.waitForEvent('download', { timeout: timeoutMs }),
    page.keyboard.press('Control+s'),
  ])
  const file = await download.path()
  if (!file) throw new Error(`export failed: ${await download.failure()}`)
  return fs.readFileSync(file, 'utf8')
}

// The export is evented: walk each profile's open/close events.
function summarize(exported) {
  return JSON.parse(exported).profiles.map(prof => {
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

// Prints a file's line; returns its exit status.
function emit(report) {
  if (report.speedscope) {
    const { exported, ...seen } = report.speedscope
    report.speedscope = { version: SPEEDSCOPE_VERSION, ...seen, profiles: [] }
    try {
      if (exported) report.speedscope.profiles = summarize(exported)
    } catch (e) {
      report.internalError = `cannot read speedscope's export: ${e.message}`
    }
  }
  if (report.internalError) {
    console.log(JSON.stringify(report))
    return 2
  }
  report.accepted = report.schema.valid &&
    (!report.speedscope || report.speedscope.outcome === 'imported')
  console.log(JSON.stringify(report))
  return report.accepted ? 0 : 1
}

async function main() {
  const opts = parseArgs(process.argv.slice(2))
  if (!opts) {
    console.error(USAGE)
    return 2
  }
  let files
  try {
    files = expandPaths(opts.paths)
  } catch (e) {
    if (!(e instanceof UsageError)) throw e
    console.error(e.message)
    return 2
  }

  const app = opts.browser ? new App(opts.timeout) : null
  let status = 0
  // A file's export is summarized while the app imports the next file.
  let previous = null
  const flush = () => {
    if (previous) status = Math.max(status, emit(previous))
    previous = null
  }
  try {
    if (app) {
      try {
        await app.ensureBrowser()
      } catch (e) {
        console.error(`cannot start ${CHROMIUM}: ${e.message}`)
        return 2
      }
    }
    for (const [i, file] of files.entries()) {
      const report = { file, accepted: false, schema: null, speedscope: null }
      let bytes
      try {
        bytes = fs.readFileSync(file)
      } catch (e) {
        flush()
        console.error(`cannot read ${file}: ${e.message}`)
        previous = { ...report, internalError: `cannot read ${file}: ${e.message}` }
        continue
      }
      try {
        const started = app ? await app.start(file, bytes, i + 1 < files.length) : null
        flush()
        report.schema = schemaReport(bytes.toString('utf8'))
        if (started) report.speedscope = await app.finish(started)
        previous = report
      } catch (e) {
        flush()
        previous = { ...report, internalError: String(e && e.stack || e) }
      }
    }
    flush()
  } finally {
    if (app) await app.close()
  }
  return status
}

main().then(code => { process.exitCode = code }, err => {
  console.log(JSON.stringify({ accepted: false, internalError: String(err && err.stack || err) }))
  process.exitCode = 2
})
