// agentjail's JavaScript runner: the first thing node runs in a jail. Trusted code, written
// for one job; it never reads anything but agentjail's frames on fd 3 and the program's stdin.
//
//   fd 0  the program's stdin (the input payload, one JSON line), read by `input()`
//   fd 1, 2  the program's stdout and stderr (captured under the caps by the supervisor)
//   fd 3  jobs from agentjail: "AJ1 <kind> <length>\n" then <length> bytes of source
//   fd 4  reports to agentjail: one JSON object per line
//
// The source arrives as the exact bytes the checker judged and runs as `node /app/main.js`
// would run it: a CommonJS module (the same five wrapper parameters, `this` is
// module.exports, require.main is the module), compiled from those bytes as UTF-8 with no
// BOM stripping, never re-run as an ES module. Reports are informational: the program runs in
// this same process, so no verdict of agentjail's depends on them (exit status, limits and
// usage come from the kernel).
//
// This file is a CommonJS script (`.cjs`: node reads no package.json to decide) that uses no
// `__proto__`, `eval` or `Function`, so it runs under the default policy's node flags.
'use strict';

const fs = require('fs');
const vm = require('vm');
const Module = require('module');
const { Buffer } = require('buffer');
const { inspect, types: { isNativeError } } = require('util');

const JOB_FD = 3;
const REPORT_FD = 4;
const FILENAME = '/app/main.js';
const DIRNAME = '/app';
const RUNNER = __filename;
const MAX_MESSAGE = 2000;
const errorToString = Error.prototype.toString;
const stringify = JSON.stringify;
const proc = process;

function report(obj) {
  const line = Buffer.from(stringify(obj) + '\n', 'utf8');
  let off = 0;
  while (off < line.length) off += fs.writeSync(REPORT_FD, line, off, line.length - off);
}

// A blocking read of fd `fd` into `buf` at `off`; 0 at EOF. A non-blocking descriptor is
// waited on (EAGAIN), never spun on.
const pause = new Int32Array(new SharedArrayBuffer(4));
function readSome(fd, buf, off, len) {
  for (;;) {
    try {
      return fs.readSync(fd, buf, off, len, null);
    } catch (e) {
      if (e.code === 'EAGAIN') Atomics.wait(pause, 0, 0, 5);
      else if (e.code === 'EOF') return 0;
      else throw e;
    }
  }
}

function readExact(n) {
  const buf = Buffer.alloc(n);
  let off = 0;
  while (off < n) {
    const got = readSome(JOB_FD, buf, off, Math.min(n - off, 1 << 20));
    if (got === 0) return null;
    off += got;
  }
  return buf;
}

// One job frame, or null at EOF (agentjail is done with this jail).
function readFrame() {
  const one = Buffer.alloc(1);
  let header = '';
  while (!header.endsWith('\n')) {
    if (header.length > 64 || readSome(JOB_FD, one, 0, 1) === 0) return null;
    header += String.fromCharCode(one[0]);
  }
  const [magic, kind, length] = header.trim().split(' ');
  const n = Number(length);
  if (magic !== 'AJ1' || !Number.isSafeInteger(n) || n < 0) return null;
  const source = readExact(n);
  return source === null ? null : { kind, source };
}

// input(): the next line of stdin without its line ending, as Python's input() returns it;
// an Error named EOFError at the end of input. Synchronous: the program needs neither
// `process` nor `fs` to read its payload.
let pending = Buffer.alloc(0);
let stdinEnded = false;
function input() {
  for (;;) {
    const nl = pending.indexOf(10);
    if (nl >= 0) {
      const line = pending.subarray(0, nl);
      pending = pending.subarray(nl + 1);
      return line.toString('utf8').replace(/\r$/, '');
    }
    if (stdinEnded) {
      if (pending.length === 0) {
        const e = new Error('EOF when reading a line');
        e.name = 'EOFError';
        throw e;
      }
      const rest = pending;
      pending = Buffer.alloc(0);
      return rest.toString('utf8');
    }
    const chunk = Buffer.alloc(64 * 1024);
    const got = readSome(0, chunk, 0, chunk.length);
    if (got === 0) stdinEnded = true;
    else pending = Buffer.concat([pending, chunk.subarray(0, got)]);
  }
}

// The rest of stdin (what input() has not taken), to its end; empty once it has been read.
function readAllStdin() {
  const chunks = [pending];
  pending = Buffer.alloc(0);
  while (!stdinEnded) {
    const chunk = Buffer.alloc(64 * 1024);
    const got = readSome(0, chunk, 0, chunk.length);
    if (got === 0) stdinEnded = true;
    else chunks.push(chunk.subarray(0, got));
  }
  return Buffer.concat(chunks);
}

// An encoding as node's fs and streams take it: a string or { encoding }; null for bytes.
function encodingOf(options) {
  const enc = typeof options === 'string' ? options : options && options.encoding;
  if (enc === undefined || enc === null) return null;
  if (typeof enc !== 'string' || !Buffer.isEncoding(enc)) {
    const e = new TypeError(`The argument 'encoding' is invalid encoding. Received ${inspect(enc)}`);
    e.code = 'ERR_INVALID_ARG_VALUE';
    throw e;
  }
  return enc;
}

// What the program gets for require('fs') / require('node:fs'): reading its stdin, as node
// programs on judges do (fs.readFileSync(0) or fs.readFileSync('/dev/stdin')), and nothing
// else. The real fs reads and writes any open descriptor (the job pipe, the report pipe), so
// it never reaches the program. Any other path throws node's permission error.
function stdinReadFileSync(path, options) {
  if (path !== 0 && path !== '/dev/stdin') {
    const e = new Error(
      "Access to this API has been restricted: the program's fs reads only its stdin " +
        "(readFileSync(0) or readFileSync('/dev/stdin'))",
    );
    e.code = 'ERR_ACCESS_DENIED';
    e.permission = 'FileSystemRead';
    e.resource = text(path);
    throw e;
  }
  const enc = encodingOf(options);
  const data = readAllStdin();
  return enc === null ? data : data.toString(enc);
}
const STDIN_FS = Object.freeze(Object.assign(Object.create(null), { readFileSync: stdinReadFileSync }));

// What the program gets as `process`: `process.stdin` with the listener API judges' programs
// use (on/once 'data' and 'end', setEncoding, resume). Once the program's first turn is over,
// all of stdin arrives as one 'data' chunk (a string after setEncoding), then 'end'.
const stdinListeners = { data: [], end: [] };
let stdinEncoding = null;
let stdinFlowing = false;
function stdinFlow() {
  if (stdinFlowing) return;
  stdinFlowing = true;
  setImmediate(() => {
    const data = readAllStdin();
    if (data.length > 0) {
      const chunk = stdinEncoding === null ? data : data.toString(stdinEncoding);
      for (const f of stdinListeners.data.splice(0)) f(chunk);
    }
    for (const f of stdinListeners.end.splice(0)) f();
  });
}
const STDIN_STREAM = Object.create(null);
function stdinListen(event, listener) {
  if (typeof listener !== 'function') {
    const e = new TypeError('The "listener" argument must be of type function');
    e.code = 'ERR_INVALID_ARG_TYPE';
    throw e;
  }
  if (event === 'data' || event === 'end') {
    stdinListeners[event].push(listener);
    stdinFlow();
  }
  return STDIN_STREAM;
}
Object.assign(STDIN_STREAM, {
  on: stdinListen,
  once: stdinListen,
  setEncoding(enc) {
    stdinEncoding = encodingOf(enc);
    return STDIN_STREAM;
  },
  resume() {
    stdinFlow();
    return STDIN_STREAM;
  },
});
Object.freeze(STDIN_STREAM);
// `process.stdout.write(chunk[, encoding][, callback])` and `process.exit([code])`, as node's
// own (the runner's reference to the real process: the same validation, the same order with
// console.log, which writes pipes and files synchronously on Linux), through functions that
// hand the program nothing back: write answers true or false, its callback gets no argument
// (node's would get an error object of the stream's).
const STDOUT_STREAM = Object.create(null);
STDOUT_STREAM.write = function write(chunk, encoding, callback) {
  const done = typeof encoding === 'function' ? encoding : callback;
  const enc = typeof encoding === 'string' ? encoding : undefined;
  const ok = proc.stdout.write(chunk, enc, () => {
    if (typeof done === 'function') done();
  });
  return ok === true;
};
Object.freeze(STDOUT_STREAM);
function exit(code) {
  proc.exit(code);
}
const PROCESS = Object.freeze(
  Object.assign(Object.create(null), { stdin: STDIN_STREAM, stdout: STDOUT_STREAM, exit }),
);

// Stack traces: V8 hands the structured frames to Error.prepareStackTrace when an error's
// stack is first formatted. The runner keeps each error's frames (file, line, column as V8
// knows them, never text the program wrote) and formats the stack as node does, without the
// runner's own frames (an error `input()` throws starts in the runner) and the node internals
// below them that loaded the runner.
const framesOf = new WeakMap();
function prepareStackTrace(error, callsites) {
  const frames = [];
  for (const c of callsites) {
    const file = c.getFileName();
    if (file === RUNNER) {
      if (frames.length > 0) break;
      continue;
    }
    frames.push({ file, line: c.getLineNumber(), column: c.getColumnNumber(), text: String(c) });
  }
  if (error !== null && (typeof error === 'object' || typeof error === 'function')) {
    framesOf.set(error, frames);
  }
  let header;
  try {
    header = errorToString.call(error);
  } catch {
    header = '<error>';
  }
  return header + frames.map((f) => '\n    at ' + f.text).join('');
}
Error.prepareStackTrace = prepareStackTrace;

function text(value) {
  try {
    return String(value);
  } catch {
    return '<unprintable>';
  }
}

// The report of an uncaught exception: its type, message and the position of the innermost
// frame in /app/main.js. A SyntaxError from compiling the program carries no frame there; its
// position is the line node's compiler put in front of the stack (see `compile`).
function errorReport(err, syntax) {
  let type;
  let message;
  let line = null;
  let column = null;
  if (isNativeError(err)) {
    type = text(err.name);
    message = text(err.message);
    try {
      // Formats the stack if nothing did yet, which records the frames.
      String(err.stack);
    } catch {}
    const frames = framesOf.get(err) || [];
    const top = frames.find((f) => f.file === FILENAME);
    if (top) {
      line = top.line;
      column = top.column;
    } else if (syntax) {
      [line, column] = syntax;
    }
  } else {
    type = '<' + (err === null ? 'null' : typeof err) + '>';
    message = text(err);
  }
  return { event: 'error', type, message: message.slice(0, MAX_MESSAGE), line, column };
}

// Print what node would print for an uncaught exception (its stack, or the value), report
// it, and exit 1 as node does.
let dying = false;
function die(err, syntax) {
  if (dying) proc.reallyExit(1);
  dying = true;
  let printed;
  try {
    printed = isNativeError(err) ? String(err.stack) : 'Uncaught ' + inspect(err);
  } catch {
    printed = 'Uncaught exception';
  }
  try {
    fs.writeSync(2, printed + '\n');
  } catch {}
  try {
    report(errorReport(err, syntax));
  } catch {}
  proc.exit(1);
}

// Compile the program as node's CommonJS loader does (vm.compileFunction with the module
// wrapper's parameters, and `process`: the stand-in above, so the name never reaches the real
// object the runner deleted from the global). A SyntaxError here is the compiler's: node puts
// "/app/main.js:<line>\n<source line>\n<caret>" in front of its stack before any program
// code exists, so that text is node's own and its position is read from it.
function compile(source) {
  try {
    const params = ['exports', 'require', 'module', '__filename', '__dirname', 'process'];
    return { fn: vm.compileFunction(source, params, { filename: FILENAME }) };
  } catch (err) {
    let syntax = null;
    if (isNativeError(err) && err.name === 'SyntaxError') {
      const lines = String(err.stack).split('\n');
      const m = /^\/app\/main\.js:(\d+)$/.exec(lines[0]);
      const caret = lines.length > 2 ? lines[2].indexOf('^') : -1;
      if (m) syntax = [Number(m[1]), caret >= 0 ? caret + 1 : null];
    }
    return { err, syntax };
  }
}

// The program's module, as node makes the main module of `node /app/main.js`.
function mainModule() {
  const mod = new Module(FILENAME, null);
  mod.filename = FILENAME;
  mod.id = '.';
  mod.paths = Module._nodeModulePaths(DIRNAME);
  proc.mainModule = mod;
  proc.argv.length = 1;
  proc.argv.push(FILENAME);
  Module._cache[FILENAME] = mod;
  return mod;
}

// Take away what the program does not need and the runner no longer does: the `process`
// global (the runner keeps its own reference; node's internals hold theirs) and the
// runner's entry in the module cache.
function withdraw() {
  delete Module._cache[RUNNER];
  delete globalThis.process;
}

// node's require for the program, except that 'fs' is the stdin-only stand-in.
function programRequire() {
  const real = Module.createRequire(FILENAME);
  const require = function require(id) {
    return id === 'fs' || id === 'node:fs' ? STDIN_FS : real(id);
  };
  require.resolve = real.resolve;
  require.main = real.main;
  require.extensions = real.extensions;
  require.cache = real.cache;
  return require;
}

function runOnce(source) {
  const mod = mainModule();
  const require = programRequire();
  const compiled = compile(source.toString('utf8'));
  if (compiled.err !== undefined) die(compiled.err, compiled.syntax);
  withdraw();
  try {
    compiled.fn.call(mod.exports, mod.exports, require, mod, FILENAME, DIRNAME, PROCESS);
  } catch (err) {
    die(err, null);
  }
  mod.loaded = true;
  // node exits when the event loop is empty, with process.exitCode (0 unless changed).
}

function main() {
  const mode = proc.argv[2] || 'run';
  proc.on('uncaughtException', (err) => die(err, null));
  globalThis.input = input;
  report({ event: 'ready' });
  const frame = readFrame();
  if (frame === null) proc.exit(0);
  if (mode === 'run' && frame.kind === 'run') return runOnce(frame.source);
  proc.exit(2);
}

main();
