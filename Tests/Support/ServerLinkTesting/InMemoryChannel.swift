import Foundation
import ServerLink
import SoupSupport

/// The server's end of an in-memory channel.
public protocol InMemoryPeer: AnyObject {
    func received(text: String, on channel: InMemoryChannel)
    func received(binary: Data, on channel: InMemoryChannel)
    /// A ping from the link (`keepAlive`'s, with an empty payload, or a barrier after an upload).
    func receivedPing(_ payload: String, on channel: InMemoryChannel)
    /// The link closed or aborted the channel.
    func linkEnded(_ channel: InMemoryChannel)
}

/// A message channel held in memory, in the manner of swift-nio's
/// EmbeddedChannel: what the link sends goes to its peer, what the peer
/// sends goes to the link, each as work posted on the `TestClock` (so it
/// arrives in order and only when the test runs the clock, never inside the
/// call that sent it). Files are read whole from disk when sent, as libsoup
/// streams them.
///
/// Threading: the test's thread only.
public final class InMemoryChannel: LinkChannel {
    public let clock: TestClock
    public weak var peer: InMemoryPeer?
    public private(set) var isOpen = true
    /// The largest message the link reads (`setMaximumIncomingPayload`).
    public private(set) var maximumIncoming: UInt64 = .max
    /// How often the link asked for keep-alive pings.
    public private(set) var keepAliveSeconds: UInt32?
    private var keepAliveTimer: LinkTimer?
    private var onMessage: ((WebSocket.Message) -> Void)?
    private var onClosed: ((WebSocket.Ending) -> Void)?
    private var onPongHandler: ((String) -> Void)?
    /// How the channel ended, once it did.
    public private(set) var ending: WebSocket.Ending?
    /// Bytes of files the peer has taken.
    public private(set) var streamedBytes: UInt64 = 0
    /// The peer stops reading, as a server does after SIGTERM: what the link sends goes
    /// nowhere (no pongs, no replies, no close frame), a file being sent never completes
    /// (its completion fails when the channel ends), and the peer sends nothing either.
    public var isDeaf = false
    /// This side's address as the link sees it (nil: unknown).
    public var localAddress: String?
    private var stalledSends: [(Result<Void, WebSocketError>) -> Void] = []

    public init(clock: TestClock, peer: InMemoryPeer?) {
        self.clock = clock
        self.peer = peer
    }

    // MARK: LinkChannel (the link's side)

    public func send(text: String) {
        guard isOpen else { return }
        clock.post { [weak self] in
            guard let self, self.isOpen, !self.isDeaf else { return }
            self.peer?.received(text: text, on: self)
        }
    }

    public func send(fileAt path: String, completion: @escaping (Result<Void, WebSocketError>) -> Void) {
        clock.post { [weak self] in
            guard let self, self.isOpen else {
                return completion(.failure(WebSocketError(description: "connection closed")))
            }
            guard let data = FileManager.default.contents(atPath: path) else {
                return completion(.failure(WebSocketError(description: "cannot read \(path)")))
            }
            guard !self.isDeaf else { return self.stalledSends.append(completion) }
            self.streamedBytes += UInt64(data.count)
            self.peer?.received(binary: data, on: self)
            completion(.success(()))
        }
    }

    public func ping(payload: String) -> Bool {
        guard isOpen else { return false }
        clock.post { [weak self] in
            guard let self, self.isOpen, !self.isDeaf else { return }
            self.peer?.receivedPing(payload, on: self)
        }
        return true
    }

    public func close(code: Int, reason: String?) { end(.byUs(code: code, reason: reason ?? "")) }

    public func abort(reason: String) { end(.byUs(code: 1006, reason: reason)) }

    public func keepAlive(every seconds: UInt32) {
        keepAliveSeconds = seconds
        keepAliveTimer?.cancel()
        keepAliveTimer = clock.every(Double(seconds)) { [weak self] in
            guard let self, self.isOpen else { return false }
            if !self.isDeaf { self.peer?.receivedPing("", on: self) }
            return true
        }
    }

    public func setMaximumIncomingPayload(_ bytes: UInt64) { maximumIncoming = bytes }
    public func onPong(_ handler: @escaping (String) -> Void) { onPongHandler = handler }
    public func onEvents(message: @escaping (WebSocket.Message) -> Void, closed: @escaping (WebSocket.Ending) -> Void) {
        onMessage = message
        onClosed = closed
    }

    private func end(_ how: WebSocket.Ending) {
        guard isOpen else { return }
        isOpen = false
        ending = how
        keepAliveTimer?.cancel()
        failStalledSends()
        clock.post { [weak self] in
            guard let self else { return }
            self.peer?.linkEnded(self)
            self.onClosed?(how)
        }
    }

    // MARK: The peer's side

    /// The peer sends a text message; one larger than the link reads ends the channel (1009), as libsoup does.
    public func deliver(text: String) { deliver(.text(text), size: text.utf8.count) }
    public func deliver(binary: Data) { deliver(.binary(binary), size: binary.count) }

    /// Files a deaf peer never took: their sends fail once the channel is gone.
    private func failStalledSends() {
        let stalled = stalledSends
        stalledSends = []
        for completion in stalled {
            clock.post { completion(.failure(WebSocketError(description: "the connection closed while sending the file"))) }
        }
    }

    private func deliver(_ message: WebSocket.Message, size: Int) {
        guard isOpen, !isDeaf else { return }
        if UInt64(size) > maximumIncoming { return end(.byUs(code: 1009, reason: "message too big")) }
        clock.post { [weak self] in
            guard let self, self.isOpen else { return }
            self.onMessage?(message)
        }
    }

    /// The peer answers a ping.
    public func pong(_ payload: String) {
        guard isOpen else { return }
        clock.post { [weak self] in
            guard let self, self.isOpen else { return }
            self.onPongHandler?(payload)
        }
    }

    /// The peer closes with a close frame.
    public func closeByPeer(code: Int, reason: String?) { endByPeer(.byPeer(code: code, reason: reason)) }

    /// The peer vanishes: no close frame.
    public func dropByPeer() { endByPeer(.dropped(nil)) }

    private func endByPeer(_ how: WebSocket.Ending) {
        guard isOpen else { return }
        isOpen = false
        ending = how
        keepAliveTimer?.cancel()
        failStalledSends()
        clock.post { [weak self] in self?.onClosed?(how) }
    }
}
