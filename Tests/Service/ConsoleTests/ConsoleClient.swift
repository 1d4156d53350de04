import Foundation
import RecorderTestSupport
import XCTest

/// One HTTP answer as curl got it.
struct ConsoleAnswer {
    var status: Int
    var headers: [String: String]
    var body: Data
    var text: String { String(decoding: body, as: UTF8.self) }
    func json() -> [String: Any] { ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any]) ?? [:] }
}

/// One request with curl (a real client, in its own process) while the main
/// loop serves; `arguments` are curl's (headers, method, data). `endless`: the
/// answer is a stream that curl's `--max-time` cuts (curl's exit 28 is expected).
func consoleRequest(_ base: String, _ path: String, _ arguments: [String] = [], endless: Bool = false) throws -> ConsoleAnswer {
    let scratch = TemporaryDirectory()
    let headers = scratch.file("headers"), body = scratch.file("body")
    let (status, output) = try runWhileServing("/usr/bin/curl", ["-s", "-D", headers.path, "-o", body.path, "-w", "%{http_code}"]
                                               + arguments + [base + path], timeout: 30)
    XCTAssertEqual(status, endless ? 28 : 0, "curl: \(output)")
    var parsed: [String: String] = [:]
    for line in ((try? String(contentsOf: headers, encoding: .utf8)) ?? "").split(separator: "\r\n") {
        guard let colon = line.firstIndex(of: ":") else { continue }
        parsed[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    return ConsoleAnswer(status: Int(output.suffix(3)) ?? 0, headers: parsed, body: (try? Data(contentsOf: body)) ?? Data())
}
