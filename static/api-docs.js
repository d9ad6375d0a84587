// Swagger UI on /api/docs (templates/api/docs.html) over the OpenAPI document its page names. A file and not
// an inline script: the site's Content-Security-Policy runs scripts from this site only.
(function () {
  "use strict";
  var root = document.getElementById("swagger-ui");
  if (!root || typeof window.SwaggerUIBundle !== "function") {
    return;
  }
  window.ui = window.SwaggerUIBundle({
    url: root.getAttribute("data-url"),
    domNode: root,
    deepLinking: true,
    presets: [window.SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    // No validity badge: it is fetched from validator.swagger.io, and the page asks nothing of another site.
    validatorUrl: null,
  });
})();
