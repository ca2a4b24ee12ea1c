// MathJax for pymdownx.arithmatex (generic mode: \( \) and \[ \] inside .arithmatex elements)
// and for notebook markdown cells rendered by mkdocs-jupyter ($ $ and $$ $$ inside
// .jp-RenderedMarkdown). Everything else on a page is left alone.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"], ["$", "$"]],
    displayMath: [["\\[", "\\]"], ["$$", "$$"]],
    processEscapes: true,
    processEnvironments: true
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex|jp-RenderedMarkdown"
  }
};

document$.subscribe(() => {
  MathJax.startup.output.clearCache()
  MathJax.typesetClear()
  MathJax.texReset()
  MathJax.typesetPromise()
})
