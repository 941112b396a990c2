// Package browser holds the browser tests of the web pages: headless
// Chromium, driven through the DevTools protocol (chromedp), against the
// local runner (localdev, built and started as a process) on a test
// schema of the real database. It has no code of its own.
//
// Chromium is found through CHROME_PATH, then chromium, chromium-browser,
// google-chrome on PATH. Without it the tests fail, as a test that skips
// would be counted as passing; LETAGENTS_BROWSER_TESTS=off, set on
// purpose, skips them. Screenshots of the main views go to
// $LETAGENTS_ARTEFACTS, or to letagents-browser-artefacts in the
// temporary directory; the tests log where.
package browser
