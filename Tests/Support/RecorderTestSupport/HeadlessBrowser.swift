import Foundation
import GLibSupport
import SoupSupport

/// Debian's headless chromium, driven over the Chrome DevTools Protocol
/// with the project's own libsoup WebSocket client, so page tests run a real
/// browser against a server on the same main loop.
///
/// Threading: main-loop thread only; the synchronous calls run the main loop
/// while they wait, so in-process servers keep answering.
public final class HeadlessBrowser {
    public struct BrowserError: Error, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    private let process = Process()
    private let profile = TemporaryDirectory("allspark-chromium")
    private var socket: WebSocket?
    private var nextID = 0
    private var replies: [Int: [String: Any]] = [:]

    public static var executable: String? {
        ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts chromium with a fresh profile and attaches to its first page.
    public init(width: Int = 1280, height: Int = 800) throws {
        guard let executable = Self.executable else { throw BrowserError("chromium is not installed (scripts/setup --tests installs it)") }
        let log = profile.file("chromium.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                             "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                             "--user-data-dir=\(profile.path)", "--remote-debugging-port=0",
                             "--remote-debugging-address=127.0.0.1", "--window-size=\(width),\(height)", "about:blank"]
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        // Chromium writes the port it chose into the profile once it listens.
        // The file can exist before its text is written: wait for a port in it.
        let portFile = profile.file("DevToolsActivePort")
        var port: Int?
        guard waitOnMainLoop(30, until: {
                  port = (try? String(contentsOf: portFile, encoding: .utf8))?.split(separator: "\n").first.flatMap { Int($0) }
                  return port != nil
              }),
              let port else {
            throw BrowserError("chromium did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        }
        let pageURL = try Self.firstPage(port: port)
        var result: Result<WebSocket, WebSocketError>?
        WebSocketConnector().connect(url: pageURL, acceptAnyCertificate: false) { result = $0 }
        guard waitOnMainLoop(10, until: { result != nil }), case .success(let socket)? = result else {
            throw BrowserError("cannot attach to chromium's page: \(String(describing: result))")
        }
        socket.setMaximumIncomingPayload(64 * 1024 * 1024)
        socket.onEvents(message: { [weak self] message in
            guard case .text(let text) = message,
                  let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
                  let id = object["id"] as? Int else { return }
            self?.replies[id] = object
        }, closed: { _ in })
        self.socket = socket
    }

    deinit { close() }

    public func close() {
        socket?.close()
        socket = nil
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    private static func firstPage(port: Int) throws -> String {
        var answer: Result<HTTPClient.Response, WebSocketError>?
        let client = HTTPClient()
        client.get("http://127.0.0.1:\(port)/json/list", acceptAnyCertificate: false) { answer = $0 }
        guard waitOnMainLoop(10, until: { answer != nil }), case .success(let response)? = answer,
              let targets = (try? JSONSerialization.jsonObject(with: Data(response.body.utf8))) as? [[String: Any]],
              let page = targets.first(where: { $0["type"] as? String == "page" }),
              let url = page["webSocketDebuggerUrl"] as? String else {
            throw BrowserError("chromium lists no page: \(String(describing: answer))")
        }
        return url
    }

    /// Sends one DevTools command and waits for its result.
    @discardableResult
    public func command(_ method: String, _ params: [String: Any] = [:], timeout: Double = 20) throws -> [String: Any] {
        guard let socket else { throw BrowserError("the browser is closed") }
        nextID += 1
        let id = nextID
        let data = try JSONSerialization.data(withJSONObject: ["id": id, "method": method, "params": params])
        socket.send(text: String(decoding: data, as: UTF8.self))
        guard waitOnMainLoop(timeout, until: { self.replies[id] != nil }), let reply = replies.removeValue(forKey: id) else {
            throw BrowserError("\(method): no answer in \(timeout) s")
        }
        if let error = reply["error"] { throw BrowserError("\(method): \(error)") }
        return reply["result"] as? [String: Any] ?? [:]
    }

    /// Evaluates a JavaScript expression in the page and returns its value (awaiting a promise).
    public func evaluate(_ expression: String) throws -> Any? {
        let result = try command("Runtime.evaluate", ["expression": expression, "returnByValue": true, "awaitPromise": true])
        if let exception = result["exceptionDetails"] { throw BrowserError("script failed: \(exception)") }
        return (result["result"] as? [String: Any])?["value"]
    }

    /// Runs the main loop until `expression` is true in the page.
    public func wait(_ seconds: Double, until expression: String) -> Bool {
        waitOnMainLoop(seconds) { ((try? self.evaluate(expression)) as? Bool) == true }
    }

    public func open(_ url: String) throws {
        try command("Page.navigate", ["url": url])
        guard wait(15, until: "document.readyState === 'complete'") else { throw BrowserError("\(url) did not load") }
    }

    /// Makes the page the size of a phone or a desktop window (CSS pixels).
    public func resize(width: Int, height: Int, mobile: Bool) throws {
        try command("Emulation.setDeviceMetricsOverride",
                    ["width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile])
    }

    /// A PNG of what the page shows now.
    public func screenshot() throws -> Data {
        let result = try command("Page.captureScreenshot", ["format": "png"])
        guard let base64 = result["data"] as? String, let png = Data(base64Encoded: base64) else {
            throw BrowserError("no screenshot")
        }
        return png
    }
}
