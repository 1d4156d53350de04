import Foundation
import SoupSupport

// The API's contract: an OpenAPI 3.0 document describing every route of
// `Console.respond(to:)`, served at `GET /api/v1/openapi.json` (with a
// password, like every route but /healthz). ConsoleTests fetch it and check
// real answers against it, so a change to an answer that the document does
// not follow fails there.
extension Console {
    func openAPIDocument() -> HTTPResponse {
        HTTPResponse(status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-cache")],
                     body: .data(ConsoleResources.openAPI))
    }
}

/// The page and the API document: files in Resources/ (console.html, openapi.json) embedded in the
/// binary at build time by the EmbedResources plugin, so nothing has to be installed beside it.
enum ConsoleResources {
    /// The console page: plain HTML, CSS and JavaScript (no build step, nothing fetched from elsewhere).
    /// It logs in, then uses the REST API; the live picture is one <img> on the MJPEG preview that
    /// layout changes never reload (only CSS moves it).
    static let page = Data((EmbeddedResources.text["console.html"] ?? "").utf8)
    /// Kept as JSON (not built from the Swift types) so it reads as the contract a client gets.
    static let openAPI = Data((EmbeddedResources.text["openapi.json"] ?? "").utf8)
    /// The browser tab's icon (a camera lens).
    static let icon = Data((EmbeddedResources.text["favicon.svg"] ?? "").utf8)
}
