// Starts Swagger UI (/docs) or ReDoc (/redoc) on the element the page has, from the files the
// server mounts at /docs-assets (app/routes/docs.py): no inline script, so the pages' policy
// (app/guard.py, DOCS_CSP) keeps script-src 'self'. The schema's URL is the element's
// data-openapi-url.
"use strict";

/** Keep images from other origins out of the page: ReDoc's side menu shows Redocly's logo from
 * cdn.redoc.ly, which the policy would block anyway, but with a console error and a violation
 * report each time. Such a src is never set (neither as the property, which React uses, nor as the
 * attribute); the "error" event the image gets instead makes ReDoc drop it and keep the link's text. */
function sameOriginImagesOnly() {
  const image = HTMLImageElement.prototype;
  const src = Object.getOwnPropertyDescriptor(image, "src");
  const setAttribute = image.setAttribute;
  const elsewhere = (url) => /^\s*(https?:)?\/\//i.test(url) && new URL(url, location.href).origin !== location.origin;
  const refuse = (img) => queueMicrotask(() => img.dispatchEvent(new Event("error")));
  Object.defineProperty(image, "src", {
    ...src,
    set(value) {
      if (elsewhere(String(value))) refuse(this);
      else src.set.call(this, value);
    },
  });
  image.setAttribute = function (name, value) {
    if (String(name).toLowerCase() === "src" && elsewhere(String(value))) refuse(this);
    else setAttribute.call(this, name, value);
  };
}

(() => {
  const swagger = document.getElementById("swagger-ui");
  const redoc = document.getElementById("redoc");
  if (swagger && window.SwaggerUIBundle) {
    window.ui = window.SwaggerUIBundle({
      url: swagger.dataset.openapiUrl,
      dom_id: "#swagger-ui",
      presets: [window.SwaggerUIBundle.presets.apis],
      layout: "BaseLayout",
      deepLinking: true,
      showExtensions: true,
      showCommonExtensions: true,
      validatorUrl: null, // the default would send the schema to validator.swagger.io
    });
  } else if (redoc && window.Redoc) {
    sameOriginImagesOnly();
    window.Redoc.init(redoc.dataset.openapiUrl, {}, redoc);
  }
})();
