/**
 * The suites on small_cnn_fp32 compiled for c with no option (the default bundle of
 * lib/suite.mjs's bundleSuite) run in one editor session: bundleSuite hands each the same
 * session, so the ~20 s of starting code-server, chromium and the language server on that bundle
 * is paid once. Each suite keeps the editor as it found it (its tests close their editors and
 * undo their toggles); navigation recompiles the bundle in its last test, so it comes last.
 */
// One after the other: a suite whose modules wait at load (top-level await) would otherwise
// register its tests after the next suite's.
await import('./vscode.suite.mjs');
await import('./jumps.suite.mjs');
await import('./navigation.suite.mjs');
