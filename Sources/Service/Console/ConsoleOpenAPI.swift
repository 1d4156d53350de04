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
                     body: .data(Data(ConsoleOpenAPI.json.utf8)))
    }
}

enum ConsoleOpenAPI {
    /// Kept as JSON (not built from the Swift types) so it reads as the contract a client gets.
    static let json = ##"""
{
  "openapi": "3.0.3",
  "info": {
    "title": "allspark-recorder console API",
    "version": "1",
    "description": "The recorder's local REST API: JSON with snake_case keys and ISO 8601 times. Every call needs a password except GET /healthz and POST /api/v1/login. Browsers log in and use the session cookie, sending the CSRF token in X-CSRF-Token on every state-changing request; scripts use HTTP Basic (user admin) or the bearer token from login. A state-changing request whose Origin is another site is refused (403). After three failed attempts in a row an address is answered 429 for a doubling time. Every error has the one shape Error."
  },
  "servers": [{ "url": "/" }],
  "security": [{ "sessionCookie": [] }, { "basic": [] }, { "bearer": [] }],
  "paths": {
    "/healthz": {
      "get": {
        "operationId": "health",
        "summary": "Whether frames reach the chunks (for monitoring).",
        "security": [],
        "responses": {
          "200": { "description": "Recording.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Health" } } } },
          "503": { "description": "Not recording; the body says the state.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Health" } } } }
        }
      }
    },
    "/api/v1/login": {
      "post": {
        "operationId": "login",
        "summary": "Logs in with the password: a session cookie, its CSRF token, and the same session as a bearer token.",
        "security": [],
        "requestBody": {
          "required": true,
          "content": { "application/json": { "schema": { "$ref": "#/components/schemas/LoginRequest" } } }
        },
        "responses": {
          "200": {
            "description": "Logged in.",
            "headers": { "Set-Cookie": { "description": "allspark_session=…; HttpOnly; SameSite=Strict", "schema": { "type": "string" } } },
            "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Login" } } }
          },
          "400": { "$ref": "#/components/responses/BadRequest" },
          "401": { "$ref": "#/components/responses/Unauthorized" },
          "403": { "$ref": "#/components/responses/Forbidden" },
          "429": { "$ref": "#/components/responses/TooManyAttempts" }
        }
      }
    },
    "/api/v1/logout": {
      "post": {
        "operationId": "logout",
        "summary": "Ends the session (its cookie and its bearer token alike).",
        "security": [{ "sessionCookie": [], "csrfToken": [] }, { "basic": [] }, { "bearer": [] }],
        "responses": {
          "204": { "description": "Logged out; the cookie is cleared.", "headers": { "Set-Cookie": { "schema": { "type": "string" } } } },
          "401": { "$ref": "#/components/responses/Unauthorized" },
          "403": { "$ref": "#/components/responses/Forbidden" },
          "429": { "$ref": "#/components/responses/TooManyAttempts" }
        }
      }
    },
    "/api/v1/session": {
      "get": {
        "operationId": "session",
        "summary": "Who is logged in, and the session's CSRF token (for a reloaded page, which has its cookie but not the token).",
        "responses": {
          "200": { "description": "The session.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Session" } } } },
          "401": { "$ref": "#/components/responses/Unauthorized" },
          "429": { "$ref": "#/components/responses/TooManyAttempts" }
        }
      }
    },
    "/api/v1/status": {
      "get": {
        "operationId": "status",
        "summary": "Recording, storage and server state.",
        "responses": {
          "200": { "description": "The state now.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Status" } } } },
          "401": { "$ref": "#/components/responses/Unauthorized" },
          "429": { "$ref": "#/components/responses/TooManyAttempts" }
        }
      }
    },
    "/api/v1/chunks": {
      "get": {
        "operationId": "listChunks",
        "summary": "The catalogued chunks overlapping [from, to), oldest first.",
        "parameters": [
          { "name": "from", "in": "query", "required": false, "description": "ISO 8601, or epoch seconds (negative: that many seconds ago).", "schema": { "type": "string" } },
          { "name": "to", "in": "query", "required": false, "description": "ISO 8601, or epoch seconds (negative: that many seconds ago).", "schema": { "type": "string" } }
        ],
        "responses": {
          "200": { "description": "The chunks.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Chunks" } } } },
          "401": { "$ref": "#/components/responses/Unauthorized" },
          "422": { "$ref": "#/components/responses/Invalid" },
          "429": { "$ref": "#/components/responses/TooManyAttempts" }
        }
      }
    },
    "/api/v1/chunks/{name}": {
      "parameters": [
        { "name": "name", "in": "path", "required": true, "description": "A chunk's or a companion's file name as listed; nothing else in the storage folder is served.", "schema": { "type": "string" } }
      ],
      "get": {
        "operationId": "downloadChunk",
        "summary": "Downloads one chunk or one of its companions (timestamps, audio), whole or one byte range.",
        "parameters": [{ "$ref": "#/components/parameters/Range" }],
        "responses": {
          "200": { "$ref": "#/components/responses/ChunkFile" },
          "206": { "$ref": "#/components/responses/ChunkPart" },
          "401": { "$ref": "#/components/responses/Unauthorized" },
          "404": { "$ref": "#/components/responses/NotFound" },
          "410": { "$ref": "#/components/responses/Gone" },
          "416": { "$ref": "#/components/responses/RangeNotSatisfiable" },
          "429": { "$ref": "#/components/responses/TooManyAttempts" }
        }
      },
      "head": {
        "operationId": "chunkHeaders",
        "summary": "The download's headers without its body.",
        "parameters": [{ "$ref": "#/components/parameters/Range" }],
        "responses": {
          "200": { "description": "As GET, without the body." },
          "206": { "description": "As GET, without the body." },
          "401": { "$ref": "#/components/responses/Unauthorized" },
          "404": { "$ref": "#/components/responses/NotFound" },
          "416": { "$ref": "#/components/responses/RangeNotSatisfiable" }
        }
      }
    },
    "/api/v1/settings": {
      "get": {
        "operationId": "getSettings",
        "summary": "The recording settings, with their version in ETag.",
        "responses": {
          "200": { "$ref": "#/components/responses/Settings" },
          "401": { "$ref": "#/components/responses/Unauthorized" },
          "429": { "$ref": "#/components/responses/TooManyAttempts" }
        }
      },
      "head": {
        "operationId": "settingsVersion",
        "summary": "The settings' ETag without the body.",
        "responses": {
          "200": { "description": "As GET, without the body.", "headers": { "ETag": { "schema": { "type": "string" } } } },
          "401": { "$ref": "#/components/responses/Unauthorized" }
        }
      },
      "patch": {
        "operationId": "changeSettings",
        "summary": "Changes the given settings, only from the version read: applied live through the recorder's retune (as SIGHUP) and kept for the next start.",
        "security": [{ "sessionCookie": [], "csrfToken": [] }, { "basic": [] }, { "bearer": [] }],
        "parameters": [
          { "name": "If-Match", "in": "header", "required": true, "description": "The ETag of the settings read, or *.", "schema": { "type": "string" } }
        ],
        "requestBody": {
          "required": true,
          "content": { "application/json": { "schema": { "$ref": "#/components/schemas/SettingsChange" } } }
        },
        "responses": {
          "200": { "$ref": "#/components/responses/Settings" },
          "400": { "$ref": "#/components/responses/BadRequest" },
          "401": { "$ref": "#/components/responses/Unauthorized" },
          "403": { "$ref": "#/components/responses/Forbidden" },
          "409": {
            "description": "The settings changed since they were read (error code conflict); ETag has the current version.",
            "headers": { "ETag": { "schema": { "type": "string" } } },
            "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } }
          },
          "422": { "$ref": "#/components/responses/Invalid" },
          "428": {
            "description": "If-Match is missing (error code precondition_required).",
            "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } }
          },
          "429": { "$ref": "#/components/responses/TooManyAttempts" },
          "503": { "$ref": "#/components/responses/NotRecording" }
        }
      }
    },
    "/api/v1/uploads": {
      "get": {
        "operationId": "uploadQueue",
        "summary": "The server link's upload queue: the upload in flight, those waiting, the ranges still being recorded, and the last uploads that ended.",
        "responses": {
          "200": { "description": "The queue now.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Uploads" } } } },
          "401": { "$ref": "#/components/responses/Unauthorized" },
          "409": { "$ref": "#/components/responses/NoServer" },
          "429": { "$ref": "#/components/responses/TooManyAttempts" }
        }
      },
      "post": {
        "operationId": "requestUploads",
        "summary": "Sends the chunks of one range, or of up to 100 ranges, to the server (as the server's uploadTimeRange does). Chunks still being recorded in a range follow when they are finished.",
        "security": [{ "sessionCookie": [], "csrfToken": [] }, { "basic": [] }, { "bearer": [] }],
        "requestBody": {
          "required": true,
          "content": { "application/json": { "schema": { "$ref": "#/components/schemas/UploadRequest" } } }
        },
        "responses": {
          "202": { "description": "Queued.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/UploadAccepted" } } } },
          "400": { "$ref": "#/components/responses/BadRequest" },
          "401": { "$ref": "#/components/responses/Unauthorized" },
          "403": { "$ref": "#/components/responses/Forbidden" },
          "409": { "$ref": "#/components/responses/NoServer" },
          "422": { "$ref": "#/components/responses/Invalid" },
          "429": { "$ref": "#/components/responses/TooManyAttempts" }
        }
      }
    },
    "/api/v1/server": {
      "get": {
        "operationId": "getServer",
        "summary": "The AllSpark server the recorder talks to, as chosen, and how the link is doing.",
        "responses": {
          "200": { "description": "The server link.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/ServerLink" } } } },
          "401": { "$ref": "#/components/responses/Unauthorized" },
          "429": { "$ref": "#/components/responses/TooManyAttempts" }
        }
      },
      "patch": {
        "operationId": "changeServer",
        "summary": "Chooses the server: a host (or \"\" for none), whether to verify its certificate, and whether an empty host means the server discovery picks. Kept for the next start, over the config file. Uploads waiting for the old server are dropped.",
        "requestBody": { "required": true, "content": { "application/json": { "schema": {
          "type": "object", "additionalProperties": false,
          "properties": {
            "host": { "type": "string", "description": "host:port, [v6addr]:port, ws://… or wss://…; \"\" for none." },
            "verify_tls": { "type": "boolean" },
            "discovery": { "type": "boolean", "description": "With no host: connect to a server found with Avahi (_allspark._tcp)." }
          } } } } },
        "responses": {
          "200": { "description": "The server link after the change.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/ServerLink" } } } },
          "400": { "$ref": "#/components/responses/BadRequest" },
          "401": { "$ref": "#/components/responses/Unauthorized" },
          "403": { "$ref": "#/components/responses/Forbidden" },
          "422": { "$ref": "#/components/responses/Invalid" },
          "429": { "$ref": "#/components/responses/TooManyAttempts" },
          "503": { "$ref": "#/components/responses/NotRecording" }
        }
      }
    },
    "/api/v1/servers": {
      "get": {
        "operationId": "servers",
        "summary": "The AllSpark servers discovered on the local network (empty when discovery is off).",
        "responses": {
          "200": { "description": "The servers.", "content": { "application/json": { "schema": { "type": "array", "items": { "$ref": "#/components/schemas/Server" } } } } },
          "401": { "$ref": "#/components/responses/Unauthorized" },
          "429": { "$ref": "#/components/responses/TooManyAttempts" }
        }
      }
    },
    "/api/v1/preview.mjpeg": {
      "get": {
        "operationId": "preview",
        "summary": "The live picture after the privacy stage, as MJPEG: one JPEG part per picture, capped by [console] preview_fps and preview_width. A viewer still taking the last picture skips the next.",
        "responses": {
          "200": {
            "description": "An endless stream of parts, each --allsparkframe, Content-Type: image/jpeg and Content-Length.",
            "content": { "multipart/x-mixed-replace": { "schema": { "type": "string", "format": "binary" } } }
          },
          "401": { "$ref": "#/components/responses/Unauthorized" },
          "429": { "$ref": "#/components/responses/TooManyAttempts" },
          "503": { "$ref": "#/components/responses/NotRecording" }
        }
      }
    },
    "/api/v1/snapshot.jpg": {
      "get": {
        "operationId": "snapshot",
        "summary": "One picture after the privacy stage: the latest if fresh, else the next one made.",
        "responses": {
          "200": { "description": "The picture.", "content": { "image/jpeg": { "schema": { "type": "string", "format": "binary" } } } },
          "401": { "$ref": "#/components/responses/Unauthorized" },
          "429": { "$ref": "#/components/responses/TooManyAttempts" },
          "503": { "$ref": "#/components/responses/NotRecording" }
        }
      }
    },
    "/metrics": {
      "get": {
        "operationId": "metrics",
        "summary": "Prometheus metrics (text format 0.0.4): frames, chunks, storage, disk, connection, uploads.",
        "responses": {
          "200": { "description": "The metrics.", "content": { "text/plain": { "schema": { "type": "string" } } } },
          "401": { "$ref": "#/components/responses/Unauthorized" },
          "429": { "$ref": "#/components/responses/TooManyAttempts" }
        }
      }
    },
    "/api/v1/openapi.json": {
      "get": {
        "operationId": "openAPI",
        "summary": "This document.",
        "responses": {
          "200": { "description": "OpenAPI 3.0.", "content": { "application/json": { "schema": { "type": "object" } } } },
          "401": { "$ref": "#/components/responses/Unauthorized" },
          "429": { "$ref": "#/components/responses/TooManyAttempts" }
        }
      }
    }
  },
  "components": {
    "securitySchemes": {
      "sessionCookie": { "type": "apiKey", "in": "cookie", "name": "allspark_session", "description": "Set by POST /api/v1/login (HttpOnly, SameSite=Strict)." },
      "csrfToken": { "type": "apiKey", "in": "header", "name": "X-CSRF-Token", "description": "The login's csrf_token; required with the cookie on every state-changing request." },
      "basic": { "type": "http", "scheme": "basic", "description": "User admin and the console password." },
      "bearer": { "type": "http", "scheme": "bearer", "description": "The token from POST /api/v1/login." }
    },
    "parameters": {
      "Range": { "name": "Range", "in": "header", "required": false, "description": "One range: bytes=a-b, bytes=a- or bytes=-n.", "schema": { "type": "string" } }
    },
    "responses": {
      "BadRequest": { "description": "The body is not what the operation takes (error code bad_request).", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } },
      "Unauthorized": {
        "description": "No valid password, session or token (error code unauthorized). A Basic challenge is sent unless the request has X-Requested-With.",
        "headers": { "WWW-Authenticate": { "schema": { "type": "string" } } },
        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } }
      },
      "Forbidden": { "description": "A state-changing request from another site, or without the session's CSRF token (error code forbidden).", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } },
      "NotFound": { "description": "No such chunk in the catalog (error code not_found).", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } },
      "Gone": { "description": "The chunk is catalogued but cannot be read any more (error code gone).", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } },
      "NoServer": { "description": "No AllSpark server is configured or discovered (error code no_server).", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } },
      "Invalid": { "description": "A value is not allowed; field names it and allowed lists what is (error codes invalid_value, invalid_time, unknown_field).", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } },
      "NotRecording": { "description": "The recorder is not running (error code not_recording), or too many viewers (too_many_viewers). A snapshot that got no picture in time says so the same way (not_recording).", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } },
      "TooManyAttempts": {
        "description": "Too many failed logins from this address (error code too_many_attempts).",
        "headers": { "Retry-After": { "description": "Seconds to wait.", "schema": { "type": "integer" } } },
        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } }
      },
      "Settings": {
        "description": "The settings.",
        "headers": { "ETag": { "description": "Their version, for If-Match.", "schema": { "type": "string" } } },
        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Settings" } } }
      },
      "ChunkFile": {
        "description": "The whole chunk or companion.",
        "headers": {
          "Accept-Ranges": { "schema": { "type": "string", "enum": ["bytes"] } },
          "Content-Disposition": { "schema": { "type": "string" } }
        },
        "content": {
          "video/mp4": { "schema": { "type": "string", "format": "binary" } },
          "video/quicktime": { "schema": { "type": "string", "format": "binary" } },
          "text/plain": { "schema": { "type": "string", "description": "timestamps_<ms>.txt: one line per frame, <frame index> : <epoch ms>." } },
          "audio/wav": { "schema": { "type": "string", "format": "binary" } },
          "audio/mp4": { "schema": { "type": "string", "format": "binary" } },
          "application/json": { "schema": { "type": "string", "format": "binary", "description": "pose_<ms>.json" } }
        }
      },
      "ChunkPart": {
        "description": "The range asked for.",
        "headers": { "Content-Range": { "description": "bytes first-last/size", "schema": { "type": "string" } } },
        "content": {
          "video/mp4": { "schema": { "type": "string", "format": "binary" } },
          "video/quicktime": { "schema": { "type": "string", "format": "binary" } },
          "text/plain": { "schema": { "type": "string", "description": "timestamps_<ms>.txt: one line per frame, <frame index> : <epoch ms>." } },
          "audio/wav": { "schema": { "type": "string", "format": "binary" } },
          "audio/mp4": { "schema": { "type": "string", "format": "binary" } },
          "application/json": { "schema": { "type": "string", "format": "binary", "description": "pose_<ms>.json" } }
        }
      },
      "RangeNotSatisfiable": {
        "description": "The range is outside the file, or several ranges were asked for; no body.",
        "headers": { "Content-Range": { "description": "bytes */size", "schema": { "type": "string" } } }
      }
    },
    "schemas": {
      "Error": {
        "type": "object",
        "required": ["error"],
        "additionalProperties": false,
        "properties": {
          "error": {
            "type": "object",
            "required": ["code", "message"],
            "additionalProperties": false,
            "properties": {
              "code": { "type": "string", "description": "For programs: unauthorized, forbidden, too_many_attempts, not_found, gone, bad_request, invalid_time, invalid_value, unknown_field, conflict, precondition_required, no_server, not_recording, too_many_viewers." },
              "message": { "type": "string", "description": "For people." },
              "field": { "type": "string", "description": "The field or parameter at fault." },
              "allowed": { "type": "array", "items": { "type": "string" }, "description": "What the field may be: values, or a range as min...max." }
            }
          }
        }
      },
      "Health": {
        "type": "object",
        "required": ["status", "recording", "server"],
        "additionalProperties": false,
        "properties": {
          "status": { "type": "string", "enum": ["ok", "not_recording"] },
          "recording": { "type": "string" },
          "reason": { "type": "string", "description": "Why not, when not recording." },
          "server": { "type": "string" }
        }
      },
      "LoginRequest": {
        "type": "object",
        "required": ["password"],
        "properties": { "password": { "type": "string" } }
      },
      "Login": {
        "type": "object",
        "required": ["token", "csrf_token", "user"],
        "additionalProperties": false,
        "properties": {
          "token": { "type": "string", "description": "The session as a bearer token." },
          "csrf_token": { "type": "string" },
          "user": { "type": "string" }
        }
      },
      "Session": {
        "type": "object",
        "required": ["user"],
        "additionalProperties": false,
        "properties": {
          "user": { "type": "string" },
          "csrf_token": { "type": "string", "description": "Only when the request came with the session cookie." }
        }
      },
      "Status": {
        "type": "object",
        "required": ["version", "device", "time", "recording", "storage", "server"],
        "additionalProperties": false,
        "properties": {
          "version": { "type": "string" },
          "device": { "type": "string" },
          "time": { "type": "string", "format": "date-time" },
          "recording": {
            "type": "object",
            "required": ["state", "frames_captured", "frames_recorded", "chunks_recorded", "video_format", "chunk_duration_ms", "pipeline", "privacy"],
            "additionalProperties": false,
            "properties": {
              "state": { "type": "string", "description": "stopped, waitingForSource, recording, waitingToRetry(…) or stopping." },
              "frames_captured": { "type": "integer" },
              "frames_recorded": { "type": "integer" },
              "chunks_recorded": { "type": "integer" },
              "last_problem": { "type": "string" },
              "video_format": { "$ref": "#/components/schemas/VideoFormat" },
              "chunk_duration_ms": { "type": "integer" },
              "pipeline": { "type": "string" },
              "width": { "type": "integer" },
              "height": { "type": "integer" },
              "frames_per_second": { "type": "number" },
              "privacy": { "type": "string" }
            }
          },
          "storage": {
            "type": "object",
            "required": ["path", "chunks", "bytes", "buffer_max_bytes"],
            "additionalProperties": false,
            "properties": {
              "path": { "type": "string" },
              "chunks": { "type": "integer" },
              "bytes": { "type": "integer", "format": "int64" },
              "buffer_max_bytes": { "type": "integer", "format": "int64" },
              "disk_free_bytes": { "type": "integer", "format": "int64" },
              "oldest": { "type": "string", "format": "date-time" },
              "newest": { "type": "string", "format": "date-time" }
            }
          },
          "server": {
            "type": "object",
            "required": ["state"],
            "additionalProperties": false,
            "properties": {
              "state": { "type": "string", "enum": ["none", "disconnected", "connecting", "connected"] },
              "scheme": { "type": "string", "enum": ["ws", "wss"], "description": "While connected." },
              "address": { "type": "string" }
            }
          }
        }
      },
      "VideoFormat": { "type": "string", "enum": ["mp4", "mov"] },
      "Chunk": {
        "type": "object",
        "required": ["name", "start", "end", "duration_s", "size_bytes", "format", "url", "companions"],
        "additionalProperties": false,
        "properties": {
          "name": { "type": "string" },
          "start": { "type": "string", "format": "date-time" },
          "end": { "type": "string", "format": "date-time" },
          "duration_s": { "type": "number" },
          "size_bytes": { "type": "integer", "format": "int64" },
          "format": { "$ref": "#/components/schemas/VideoFormat" },
          "url": { "type": "string", "description": "Where to download it." },
          "companions": { "type": "array", "description": "The files recorded with it, in the order an upload sends them.", "items": { "$ref": "#/components/schemas/Companion" } }
        }
      },
      "Companion": {
        "type": "object",
        "required": ["name", "kind", "size_bytes", "mime_type", "url"],
        "additionalProperties": false,
        "properties": {
          "name": { "type": "string", "description": "timestamps_<ms>.txt, audio_<ms>.wav|m4a or pose_<ms>.json, <ms> as in the chunk's name." },
          "kind": { "type": "string", "enum": ["timestamps", "audio", "pose"] },
          "size_bytes": { "type": "integer", "format": "int64" },
          "mime_type": { "type": "string" },
          "url": { "type": "string", "description": "Where to download it." }
        }
      },
      "Chunks": {
        "type": "object",
        "required": ["chunks"],
        "additionalProperties": false,
        "properties": { "chunks": { "type": "array", "items": { "$ref": "#/components/schemas/Chunk" } } }
      },
      "Settings": {
        "type": "object",
        "required": ["video_format", "chunk_duration_ms", "buffer_max_mb"],
        "additionalProperties": false,
        "properties": {
          "video_format": { "$ref": "#/components/schemas/VideoFormat" },
          "chunk_duration_ms": { "type": "integer" },
          "buffer_max_mb": { "type": "integer" }
        }
      },
      "SettingsChange": {
        "type": "object",
        "description": "Only the settings to change; any other key is answered 422 unknown_field.",
        "additionalProperties": false,
        "properties": {
          "video_format": { "$ref": "#/components/schemas/VideoFormat" },
          "chunk_duration_ms": { "type": "integer" },
          "buffer_max_mb": { "type": "integer", "description": "1 … 10000000, the config file's limits (the [server] bounds hold servers only; docs/settings.md)." }
        }
      },
      "TimeRange": {
        "type": "object",
        "required": ["from", "to"],
        "properties": {
          "from": { "type": "string", "format": "date-time" },
          "to": { "type": "string", "format": "date-time" }
        }
      },
      "UploadRequest": {
        "type": "object",
        "description": "One range as from and to, or up to 100 in ranges (or both).",
        "properties": {
          "from": { "type": "string", "format": "date-time" },
          "to": { "type": "string", "format": "date-time" },
          "ranges": { "type": "array", "items": { "$ref": "#/components/schemas/TimeRange" } }
        }
      },
      "UploadAccepted": {
        "type": "object",
        "required": ["accepted"],
        "additionalProperties": false,
        "properties": {
          "accepted": {
            "type": "array",
            "items": {
              "type": "object",
              "required": ["from", "to", "chunks"],
              "additionalProperties": false,
              "properties": {
                "from": { "type": "string", "format": "date-time" },
                "to": { "type": "string", "format": "date-time" },
                "chunks": { "type": "integer", "description": "Finished chunks in the range now." }
              }
            }
          }
        }
      },
      "Uploads": {
        "type": "object",
        "required": ["waiting", "watches", "finished", "finished_ok_total", "finished_failed_total"],
        "additionalProperties": false,
        "properties": {
          "in_flight": {
            "type": "object",
            "description": "The chunk being sent now, if any.",
            "required": ["name", "reason", "attempt", "since"],
            "additionalProperties": false,
            "properties": {
              "name": { "type": "string" },
              "reason": { "type": "string" },
              "attempt": { "type": "integer", "description": "1 for the first attempt." },
              "since": { "type": "string", "format": "date-time" }
            }
          },
          "waiting": {
            "type": "array",
            "description": "Chunks waiting to be sent, next first.",
            "items": {
              "type": "object",
              "required": ["name", "reason", "attempts"],
              "additionalProperties": false,
              "properties": {
                "name": { "type": "string" },
                "reason": { "type": "string" },
                "attempts": { "type": "integer", "description": "Attempts already made." }
              }
            }
          },
          "watches": {
            "type": "array",
            "description": "Ranges still being recorded: chunks that finish in them are queued.",
            "items": {
              "type": "object",
              "required": ["from", "to", "reason"],
              "additionalProperties": false,
              "properties": {
                "from": { "type": "string", "format": "date-time" },
                "to": { "type": "string", "format": "date-time" },
                "reason": { "type": "string" }
              }
            }
          },
          "finished": {
            "type": "array",
            "description": "The last uploads that ended (at most 50), newest first.",
            "items": {
              "type": "object",
              "required": ["name", "ok", "at"],
              "additionalProperties": false,
              "properties": {
                "name": { "type": "string" },
                "ok": { "type": "boolean", "description": "True when the server confirmed it received the chunk." },
                "at": { "type": "string", "format": "date-time" },
                "message": { "type": "string", "description": "The server's word, or why the upload was given up." }
              }
            }
          },
          "finished_ok_total": { "type": "integer" },
          "finished_failed_total": { "type": "integer" }
        }
      },
      "ServerLink": {
        "type": "object",
        "required": ["host", "verify_tls", "discovery", "state"],
        "additionalProperties": false,
        "properties": {
          "host": { "type": "string", "description": "server.host as configured or last chosen; \"\" for none." },
          "verify_tls": { "type": "boolean" },
          "discovery": { "type": "boolean" },
          "state": { "type": "string", "enum": ["none", "disconnected", "connecting", "connected"] },
          "scheme": { "type": "string", "enum": ["ws", "wss"], "description": "While connected." },
          "address": { "type": "string", "description": "The server the link is at or trying (a discovered one when the host is empty)." }
        }
      },
      "Server": {
        "type": "object",
        "required": ["name", "host", "addresses", "port"],
        "additionalProperties": false,
        "properties": {
          "name": { "type": "string" },
          "host": { "type": "string" },
          "addresses": { "type": "array", "items": { "type": "string" } },
          "port": { "type": "integer" }
        }
      }
    }
  }
}
"""##
}
