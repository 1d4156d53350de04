import Foundation
import GLibSupport
import Recorder
import RecorderCore
import SoupSupport

/// `GET /api/v1/pipeline`: the pipeline the recorder runs, and check-pipeline's verdict on it now.
struct PipelineAnswer: Encodable {
    struct Variable: Encodable {
        var name: String
        /// "********" for a credential (a name with "password" or "secret").
        var value: String
    }
    /// The pipeline file's path.
    var file: String
    /// The file as written (its `${variables}` unsubstituted: credentials never appear in it).
    var text: String
    var variables: [Variable]
    /// check-pipeline's verdict: syntax, installed elements, the contract, the privacy boundary.
    var ok: Bool
    var verdict: String
    /// The privacy stage as configured.
    var privacy: String
}

// The settings a person expects besides the recording ones: the password and
// a look at the pipeline (read-only: it is edited in its file).
extension Console {
    /// `POST /api/v1/password {"old": "…", "new": "…"}`: 204; other sessions end. Answered
    /// once the old password is checked and the new one hashed, both off the main loop.
    func changePassword(_ request: HTTPRequest, proof: ConsoleAuth.Proof, _ respond: @escaping (HTTPResponse) -> Void) {
        struct Change: Decodable { var old: String; var new: String }
        guard let body = try? ConsoleJSON.decoder.decode(Change.self, from: request.body) else {
            return respond(error(400, "bad_request", "expected {\"old\": \"…\", \"new\": \"…\"}"))
        }
        guard body.new.count >= 8, body.new.count <= 1024 else {
            return respond(error(422, "invalid_value", "the new password must have 8 to 1024 characters", field: "new"))
        }
        var session: ConsoleAuth.Session?
        if case .session(let s) = proof { session = s }
        if case .bearer(let s) = proof { session = s }
        auth.changePassword(old: body.old, new: body.new, from: request.remoteAddress, keeping: session) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success:
                self.logger.notice("console: the password was changed from \(request.remoteAddress); other sessions ended")
                respond(HTTPResponse(status: 204))
            case .failure(.unauthenticated(let why)):
                self.logger.warning("console: a password change from \(request.remoteAddress) gave a wrong current password")
                respond(self.error(403, "wrong_password", why, field: "old"))
            case .failure(let refusal):
                respond(self.answer(refusal, challenge: false))
            }
        }
    }

    /// Reads and checks the pipeline on the media queue (parsing makes elements; not on the main loop).
    func pipelineView() -> HTTPResponse {
        let config = service.recorder?.config ?? service.configuration
        let file = config.recording.pipeline
        let variables = config.pipelineVariables
        let faceBlur = config.privacy.faceBlur
        let privacy = faceBlur ? "faces \(config.privacy.mode == "fill" ? "filled" : "pixelated") (privacy.mode = \(config.privacy.mode)); change privacy.* in the config file and reload (systemctl reload)"
                               : "off: faces are recorded unblurred (privacy.face_blur = false)"
        let failure = Self.errorBody
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")],
                            body: .stream { [media] stream in
            media.thumbnailQueue.async {
                let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
                var ok = true, verdict: String
                do {
                    let loaded = try PipelineLoader.load(file: file, variables: variables, privacyBoundary: faceBlur)
                    _ = loaded.pipeline.setState(.null)
                    verdict = "OK: blur_in, blur_out and chunks found; " + (faceBlur ? "every frame passes blur_in → blur_out (the RTSP stream is taken after it, where chunks are fed)" : "privacy boundary not checked (privacy.face_blur = false)")
                } catch {
                    ok = false
                    // Credentials never shown, even inside an error that quotes the substituted pipeline.
                    verdict = variables.filter { PipelineTemplate.isSecret($0.key) && !$0.value.isEmpty }
                        .reduce("\(error)") { $0.replacingOccurrences(of: $1.value, with: "********") }
                }
                let answer = PipelineAnswer(
                    file: file, text: text,
                    variables: variables.sorted { $0.key < $1.key }.map { .init(name: $0.key, value: PipelineTemplate.isSecret($0.key) && !$0.value.isEmpty ? "********" : $0.value) },
                    ok: ok, verdict: verdict, privacy: privacy)
                let data = (try? ConsoleJSON.encoder.encode(answer)) ?? failure("internal", "cannot encode", nil, nil)
                MainLoop.post {
                    stream.write(data)
                    stream.finish()
                }
            }
        })
    }
}
