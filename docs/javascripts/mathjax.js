// MathJax (vendored in javascripts/vendor/mathjax: nothing loads from the network) for
//  - pymdownx.arithmatex in generic mode: \( \) and \[ \] inside .arithmatex elements, and
//  - notebook markdown cells rendered by mkdocs-jupyter: $ $ and $$ $$ inside .jp-RenderedMarkdown.
// Only those elements are typeset, so a `$` or `\(` anywhere else on a page stays text.
// (An ignore-everything class rule does not work for the notebooks: MathJax applies it again to
// each element below a processed one, so the <p> of a notebook cell was skipped.)
const MATH_ELEMENTS = ".arithmatex, .jp-RenderedMarkdown";

function typesetMath() {
  // Before the MathJax component has loaded, window.MathJax is only this configuration: its
  // startup.ready below typesets the first page.
  if (typeof MathJax.typesetPromise !== "function") return;
  const elements = Array.from(document.querySelectorAll(MATH_ELEMENTS));
  MathJax.startup.output.clearCache();
  MathJax.typesetClear();
  MathJax.texReset();
  if (elements.length) MathJax.typesetPromise(elements);
}

window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"], ["$", "$"]],
    displayMath: [["\\[", "\\]"], ["$$", "$$"]],
    processEscapes: true,
    processEnvironments: true
  },
  options: {
    // MathJax's default ignore classes, and code is skipped by tag (pre, code)
    ignoreHtmlClass: "tex2jax_ignore|mathjax_ignore"
  },
  startup: {
    typeset: false,  // the whole page is never scanned: see MATH_ELEMENTS
    ready() {
      MathJax.startup.defaultReady();
      MathJax.startup.promise.then(typesetMath);
    }
  }
};

// Material for MkDocs emits document$ for every page shown (also with instant navigation).
document$.subscribe(typesetMath);
