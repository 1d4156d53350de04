import Foundation

/// The server's `communicationsPolicy` (a `clientConfig` key): which means of
/// communication the device may use, e.g. `{"wifi":true,"cellular":true,
/// "ethernet":true,"usb":true,"bluetooth":false,"airdrop":false,"nfc":false,
/// "uwb":false,"satellite":false}`. A medium the server does not mention is
/// left as it is; only JSON booleans count (anything else is rejected, with
/// why); unknown media are listed, not errors.
public struct CommunicationsPolicy: Equatable, Sendable {
    public enum Medium: String, CaseIterable, Comparable, Sendable {
        case wifi, cellular, ethernet, usb, bluetooth, airdrop, nfc, uwb, satellite
        public static func < (a: Medium, b: Medium) -> Bool { a.rawValue < b.rawValue }
    }

    /// What the server said for each medium it mentioned: true = allowed.
    public var allowed: [Medium: Bool]
    /// Medium → why its value was not taken.
    public var rejected: [String: String] = [:]
    /// Keys that name no medium this recorder knows.
    public var ignoredKeys: [String] = []

    public init(allowed: [Medium: Bool]) { self.allowed = allowed }

    /// The media the policy forbids, in name order.
    public var forbidden: [Medium] { allowed.filter { !$0.value }.map(\.key).sorted() }

    /// Parses the value of `communicationsPolicy`; nil when it is not a JSON object.
    public init?(json value: Any) {
        guard let object = value as? [String: Any] else { return nil }
        allowed = [:]
        for (key, value) in object {
            guard let medium = Medium(rawValue: key) else {
                ignoredKeys.append(key)
                continue
            }
            // JSONSerialization hands out booleans as NSNumber with the storage type "c".
            if let n = value as? NSNumber, String(cString: n.objCType) == "c" {
                allowed[medium] = n.boolValue
            } else {
                rejected[key] = "\(loggable("\(value)")) is not true or false"
            }
        }
        ignoredKeys.sort()
    }

    /// The policy in a `clientConfig` message's text, if it holds one (nil: none, or not a JSON object).
    public static func fromClientConfig(_ text: String) -> CommunicationsPolicy? {
        guard text.utf8.count <= ServerMessage.maximumTextBytes,
              let json = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
              json["type"] as? String == "clientConfig",
              let config = json["config"] as? [String: Any],
              let policy = config["communicationsPolicy"] else { return nil }
        return CommunicationsPolicy(json: policy)
    }

    /// One line for the log: "wifi allowed, bluetooth forbidden, …".
    public var summary: String {
        allowed.sorted { $0.key < $1.key }.map { "\($0.key.rawValue) \($0.value ? "allowed" : "forbidden")" }.joined(separator: ", ")
    }
}
