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
//     in Debian's headless Chromium, through the app's own door for it
//     (speedscope.loadFileFromBase64(), called by a loader script as
//     `speedscope FILE` does), waits for the import, asks the app to export
//     what it imported, and holds the export to the file's profiles (their
//     number, names and total weights).
// One Chromium serves all files, and a running app takes files one after
// another (up to FILES_PER_APP, then a fresh one in a fresh browser
// context); a file the app rejects after serving others is checked again
// in a fresh app, so a file's verdict is never another file's doing (see
// App below). No fixed sleeps: the check waits on the app's own signals
// (console.timeEnd("import"), its importer's error, alerts), and overlaps
// the node-side work (schema, reading the export) with the app's import.
//
// Prints one JSON line per file: {"file", "accepted", "schema": {...},
// "speedscope": {"outcome", "error", "name", "profiles": [{name, unit,
// totalWeight, frames, firstAt, lastAt}], "inSharedApp"?}}; inSharedApp is
// the first try's {outcome, error} when a fresh app had to check the file
// again. A file that could not be checked at all gets "internalError"
// instead.
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
//
// Starting the app costs more than importing a file into it (its script,
// WebGL on SwiftShader, its first layout: ~2 s a file on the 2-core CI
// machine against ~0.5 s for an import and export in a running app), so an
// app that is already running takes up to FILES_PER_APP files in turn, as a
// user's tab does when they open one file after another. Every file goes in
// by the same door: a loader script on disk calling the app's own
// speedscope.loadFileFromBase64(), the call `speedscope FILE` hands its file
// over with. What a file could leave behind for the next (the profiles, the
// view, the title) is replaced by the next import, and the check holds the
// app's export to the file's own profiles, so a stale view cannot pass for
// a file; a file rejected in an app that served others before it is checked
// again in a fresh one, and that verdict is the file's.
const FILES_PER_APP = 40
// The flame graph is drawn by SwiftShader on the CPU, its cost in pixels.
const VIEWPORT = { width: 640, height: 360 }

class App {
  constructor(timeoutMs) {
    this.timeoutMs = timeoutMs
    this.browser = null
    this.launching = null
    this.context = null
    this.page = null
    this.served = 0
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

  // The app in a fresh browser context (storage, cache of its
  // own), started the way `speedscope FILE` starts it (#localProfilePath=),
  // here with an empty loader: it is ready when it offers
  // speedscope.loadFileFromBase64().
  async openApp() {
    await this.closeApp()
    await this.ensureBrowser()
    const context = await this.browser.newContext({ viewport: VIEWPORT })
    try {
      await context.addInitScript(keepExports)
      const page = await context.newPage()
      const boot = path.join(this.work, 'start.js')
      fs.writeFileSync(boot, '')
      await page.goto(`file://${path.join(RELEASE_DIR, 'index.html')}#localProfilePath=${boot}`, {
        waitUntil: 'commit', timeout: this.timeoutMs,
      })
      await page.waitForFunction(() => window.speedscope && typeof window.speedscope.loadFileFromBase64 === 'function',
        null, { timeout: this.timeoutMs })
      this.context = context
      this.page = page
      this.served = 0
    } catch (e) {
      await context.close().catch(() => {})
      throw e
    }
  }

  async closeApp() {
    const context = this.context
    this.context = this.page = null
    if (context) await context.close().catch(() => {})
  }

  async close() {
    await this.closeApp()
    if (this.browser) await this.browser.close().catch(() => {})
    fs.rmSync(this.work, { recursive: true, force: true })
  }

  // Hands FILE to the app and starts the import; the app works on it while
  // the caller does other things. Returns a handle for finish(). With
  // fresh, in an app that has served no file before.
  async start(file, bytes, fresh) {
    if (fresh || !this.page || this.served >= FILES_PER_APP) await this.openApp()
    const shared = this.served > 0
    try {
      return await this.handOver(file, bytes)
    } catch (e) {
      // an app that served others and no longer takes a file: a fresh one
      if (!shared) throw e
      await this.openApp()
      return await this.handOver(file, bytes)
    }
  }

  async handOver(file, bytes) {
    const page = this.page
    const shared = this.served++ > 0
    const loader = path.join(this.work, `load-profile-${this.count++}.js`)
    fs.writeFileSync(loader, `speedscope.loadFileFromBase64(${JSON.stringify(path.basename(file))}, ${JSON.stringify(bytes.toString('base64'))})`)
    const watch = watchImport(page, this.timeoutMs)
    try {
      // the app's own way with its loader: a script element naming the file
      await page.evaluate(src => {
        document.title = ''
        const script = document.createElement('script')
        script.src = src
        document.head.appendChild(script)
      }, `file://${loader}`)
    } catch (e) {
      watch.stop()
      fs.rmSync(loader, { force: true })
      await this.closeApp()
      throw e
    }
    return { page, loader, watch, shared, expected: fileProfiles(bytes) }
  }

  // Waits for the import, then exports. Returns { outcome, error, name,
  // exported, shared }: exported is speedscope's export, parsed, to
  // summarize(); shared says the app had served files before this one. An
  // app that rejected a file serves no more.
  async finish({ page, loader, watch, shared, expected }) {
    try {
      const result = await this.importAndExport(page, watch, expected)
      if (result.outcome !== 'imported') await this.closeApp()
      return { ...result, shared }
    } finally {
      watch.stop()
      fs.rmSync(loader, { force: true })
    }
  }

  async importAndExport(page, watch, expected) {
    const { outcome, error } = await watch.imported
    const result = { outcome, error: error || null, name: null, exported: null }
    if (outcome !== 'imported') return result
    // The import signal comes just before the app stores the profiles and
    // shows them; wait until it does: the title it set, the view tabs, and
    // the name of the profile it shows first, which is this file's.
    const shown = await page.waitForFunction(
      active => document.title.endsWith(' - speedscope') && document.body.textContent.includes('Left Heavy') &&
        (!active || document.body.textContent.includes(active)),
      expected ? expected.active : null, { timeout: this.timeoutMs }).then(() => true, () => false)
    if (!shown) return { ...result, outcome: 'timeout', error: 'import finished but the profile was not shown' }
    result.name = (await page.title()).replace(/ - speedscope$/, '')
    result.exported = JSON.parse(await exportFromApp(page, this.timeoutMs))
    // an uncaught error, alert or crash while it drew or exported the profile
    if (watch.late()) return { ...result, ...watch.late() }
    const differs = exportDiffers(expected, result.exported)
    if (differs) return { ...result, outcome: 'export-differs', error: differs }
    return result
  }
}

// The file's profiles as the app should hold them: their names, in order,
// and each one's total weight; null if the file is not a profile to compare
// with (its schema check says why).
function fileProfiles(bytes) {
  try {
    const doc = JSON.parse(bytes.toString('utf8'))
    const profiles = doc.profiles.map(p => ({
      name: p.name,
      total: p.type === 'evented' ? p.endValue - p.startValue : p.weights.reduce((a, b) => a + b, 0),
    }))
    const first = profiles[doc.activeProfileIndex || 0]
    return { profiles, active: first && typeof first.name === 'string' ? first.name : null }
  } catch {
    return null
  }
}

// Why the app's export is not the file's profiles, or null if it is.
function exportDiffers(expected, exported) {
  if (!expected) return null
  const got = exported.profiles.map(p => ({ name: p.name, total: p.endValue - p.startValue }))
  if (got.length !== expected.profiles.length)
    return `the app holds ${got.length} profiles, the file ${expected.profiles.length}`
  for (const [i, want] of expected.profiles.entries()) {
    if (want.name && got[i].name !== want.name) return `profile ${i} is ${JSON.stringify(got[i].name)} in the app, ${JSON.stringify(want.name)} in the file`
    if (Math.abs(got[i].total - want.total) > 1e-9 * Math.max(1, Math.abs(want.total)))
      return `profile ${i} weighs ${got[i].total} in the app, ${want.total} in the file`
  }
  return null
}

// Watches one file's import in a running app. imported resolves with the
// first of speedscope's own signals: console.timeEnd("import") once the
// import is done, "Failed to load format" with the importer's exception, an
// alert (unrecognized format or empty profile), an uncaught error, the
// renderer crashing, or nothing before the timeout (or the page closing).
// late() is such a signal (an error, alert or crash) after the import's,
// until stop().
function watchImport(page, timeoutMs) {
  let done = false
  let late = null
  let settle
  const imported = new Promise(resolve => {
    settle = (outcome, error) => {
      if (done) {
        if (!late && outcome !== 'timeout') late = { outcome, error }
        return
      }
      done = true
      clearTimeout(timer)
      resolve({ outcome, error })
    }
  })
  // setImmediate: if node was busy (schema, the previous export), a signal
  // that arrived in time is read before the timeout is called.
  const timer = setTimeout(() => setImmediate(() => settle('timeout', null)), timeoutMs)
  const onConsole = async msg => {
    if (done) return
    const text = msg.text()
    if (msg.type() === 'timeEnd' && text.startsWith('import:')) return settle('imported', null)
    // speedscope logs its importer's exception after this text.
    if (!text.startsWith('Failed to load format')) return
    let error = text
    const exception = msg.args()[1]
    if (exception) error = await exception.evaluate(e => String(e && e.message || e)).catch(() => text)
    settle('import-error', error)
  }
  const onError = err => settle('import-error', String(err))
  const onDialog = dialog => { settle('alert', dialog.message()); dialog.dismiss().catch(() => {}) }
  const onCrash = () => settle('crash', 'the page crashed')
  const onClose = () => settle('timeout', 'the page was closed')
  page.on('console', onConsole)
  page.on('pageerror', onError)
  page.on('dialog', onDialog)
  page.on('crash', onCrash)
  page.on('close', onClose)
  return {
    imported,
    late: () => late,
    stop() {
      clearTimeout(timer)
      settle('timeout', 'stopped')
      page.off('console', onConsole)
      page.off('pageerror', onError)
      page.off('dialog', onDialog)
      page.off('crash', onCrash)
      page.off('close', onClose)
    },
  }
}

// Ctrl+S makes speedscope serialize the profiles it holds into a blob and
// click a download link to it. The check reads that blob in the page
// (keepExports) instead of waiting for Chromium's download: after about 20
// downloads from one page Chromium stops delivering them (the app still
// logs "Saving"), which timed out 3 of the suite's 199 files in CI.
async function exportFromApp(page, timeoutMs) {
  const before = await page.evaluate(() => window.__ebpfprofExports.length)
  await page.keyboard.press('Control+s')
  await page.waitForFunction(n => window.__ebpfprofExports.length > n, before, { timeout: timeoutMs })
  return page.evaluate(async n => {
    const text = await window.__ebpfprofExports[n]
    window.__ebpfprofExports[n] = null
    return text
  }, before)
}

// Runs in the page before the app: a click on a link that downloads a blob
// (the app's export) keeps the blob's text instead.
function keepExports() {
  const click = HTMLAnchorElement.prototype.click
  window.__ebpfprofExports = []
  HTMLAnchorElement.prototype.click = function () {
    if (!this.download || !this.href.startsWith('blob:')) return click.call(this)
    window.__ebpfprofExports.push(fetch(this.href).then(r => r.text()))
  }
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
    for (const file of files) {
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
        const started = app ? await app.start(file, bytes, false) : null
        flush()
        report.schema = schemaReport(bytes.toString('utf8'))
        if (started) {
          let { shared, ...seen } = await app.finish(started)
          if (seen.outcome !== 'imported' && shared) {
            // not the verdict of an app that served other files first
            const { shared: _, ...again } = await app.finish(await app.start(file, bytes, true))
            seen = { ...again, inSharedApp: { outcome: seen.outcome, error: seen.error } }
          }
          report.speedscope = seen
        }
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
