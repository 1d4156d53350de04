import Foundation
import SoupSupport

/// One connected message channel to a server: what the link needs of a
/// WebSocket. In production it is SoupSupport's `WebSocket`; tests run the
/// link over ServerLinkTesting's in-memory channel instead.
///
/// Threading: called on the main-loop thread, and calls back there.
public protocol LinkChannel: AnyObject {
    /// Open and writable (false once closed or aborted).
    var isOpen: Bool { get }
    func send(text: String)
    /// Sends the file as one binary message (streamed from the file); `completion` follows once it is written or failed.
    func send(fileAt path: String, completion: @escaping (Result<Void, WebSocketError>) -> Void)
    /// Bytes of sent files the connection has taken so far (the peer reading them): the sign
    /// of life while a file goes out and pings wait behind it.
    var streamedBytes: UInt64 { get }
    /// This side's IP address on the connection, if known (which interface the link uses).
    var localAddress: String? { get }
    /// Sends a ping with `payload`; false if it could not be sent.
    func ping(payload: String) -> Bool
    /// Ends the connection with a close frame.
    func close(code: Int, reason: String?)
    /// Ends the connection at once, without a close frame (half a frame may be on the wire).
    func abort(reason: String)
    /// Pings the peer every `seconds` (its pongs arrive through `onPong`).
    func keepAlive(every seconds: UInt32)
    /// The largest incoming message read; a larger one ends the connection (1009).
    func setMaximumIncomingPayload(_ bytes: UInt64)
    func onPong(_ handler: @escaping (String) -> Void)
    func onEvents(message: @escaping (WebSocket.Message) -> Void, closed: @escaping (WebSocket.Ending) -> Void)
}

/// Opens channels: TCP (and TLS) connect plus the WebSocket upgrade, within one deadline.
public protocol LinkConnector: AnyObject {
    /// Connects to `url`; `completion` gets the open channel or why there is none (a
    /// deadline of `deadlineSeconds` covers connect, TLS and the upgrade together).
    func connect(url: String, acceptAnyCertificate: Bool, deadlineSeconds: UInt32,
                 completion: @escaping (Result<LinkChannel, WebSocketError>) -> Void)
}

extension WebSocket: LinkChannel {}

/// The production connector: libsoup over the CSoupShim handshake.
public final class SoupConnector: LinkConnector {
    private var connectors: [UInt32: WebSocketConnector] = [:]

    public init() {}

    public func connect(url: String, acceptAnyCertificate: Bool, deadlineSeconds: UInt32,
                        completion: @escaping (Result<LinkChannel, WebSocketError>) -> Void) {
        let connector = connectors[deadlineSeconds] ?? WebSocketConnector(timeoutSeconds: deadlineSeconds)
        connectors[deadlineSeconds] = connector
        connector.connect(url: url, acceptAnyCertificate: acceptAnyCertificate) { result in
            completion(result.map { $0 as LinkChannel })
        }
    }
}
