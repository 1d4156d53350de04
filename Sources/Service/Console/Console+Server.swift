import Foundation
import AllSparkProtocol
import RecorderService
import ServerLink
import SoupSupport

/// `GET /api/v1/server`: the server the recorder talks to, as chosen, and how the link is doing.
struct ServerLinkAnswer: Encodable {
    /// `server.host` as configured or as last set here; "" for none.
    var host: String
    var verifyTls: Bool
    /// Whether discovery runs: with it, an empty host means the server discovery picks.
    var discovery: Bool
    /// "none" (no link), "disconnected", "connecting" or "connected".
    var state: String
    /// "ws" or "wss" while connected.
    var scheme: String?
    /// The server the link is at or trying (a discovered one when the host is empty).
    var address: String?
}

// The server controls: which AllSpark server to talk to, changed through
// the service core (`RecorderService.changeServer`).
extension Console {
    func serverLink() -> ServerLinkAnswer {
        let server = service.configuration.server
        let link = linkState()
        return ServerLinkAnswer(host: server.host, verifyTls: server.verifyTLS, discovery: server.discovery,
                                state: link.state, scheme: link.scheme, address: link.address)
    }

    /// `{"host": "…" | "", "verify_tls": bool}`, either or both; an empty
    /// host disconnects (or, with discovery on, leaves the choice to it).
    func patchServerLink(_ request: HTTPRequest) -> HTTPResponse {
        guard let object = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any] else {
            return error(400, "bad_request", "expected {\"host\": \"host:port\" or \"\", \"verify_tls\": true or false, \"discovery\": true or false}")
        }
        var host = service.configuration.server.host
        var verifyTLS = service.configuration.server.verifyTLS
        var discovery = service.configuration.server.discovery
        for (key, value) in object {
            switch key {
            case "host":
                guard let text = value as? String, text.utf8.count <= 1024 else {
                    return error(422, "invalid_value", "host must be a string: host:port, [v6addr]:port, ws://… or wss://…, or \"\" for none", field: key)
                }
                host = text.trimmingCharacters(in: .whitespaces)
            case "verify_tls":
                guard let flag = jsonBool(value) else {
                    return error(422, "invalid_value", "verify_tls must be true or false", field: key, allowed: ["true", "false"])
                }
                verifyTLS = flag
            case "discovery":
                guard let flag = jsonBool(value) else {
                    return error(422, "invalid_value", "discovery must be true or false", field: key, allowed: ["true", "false"])
                }
                discovery = flag
            default:
                return error(422, "unknown_field", "\(loggable(key)) is not a server setting", field: loggable(key), allowed: ["host", "verify_tls", "discovery"])
            }
        }
        do {
            try service.changeServer(host: host, verifyTLS: verifyTLS, discovery: discovery, by: "the console from \(request.remoteAddress)")
        } catch let problem as ServerAddressError {
            return error(422, "invalid_value", loggable(problem.description), field: "host")
        } catch {
            return self.error(503, "not_recording", "\(error)")
        }
        return json(200, serverLink())
    }
}
