//! A tonic [`Codec`] whose messages are raw bytes. Shard messages are already encoded (postcard,
//! see `tessera_search::messages`), so gRPC only has to frame them: one codec, one generic
//! method, every action — no `.proto`, no generated message types, no second serialization.

use bytes::{Buf, BufMut, Bytes};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::Status;

/// Frames [`Bytes`] as gRPC messages, unchanged, both ways.
#[derive(Clone, Copy, Debug, Default)]
pub struct BytesCodec;

impl Codec for BytesCodec {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = BytesCodec;
    type Decoder = BytesCodec;

    fn encoder(&mut self) -> Self::Encoder {
        BytesCodec
    }

    fn decoder(&mut self) -> Self::Decoder {
        BytesCodec
    }
}

impl Encoder for BytesCodec {
    type Item = Bytes;
    type Error = Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.reserve(item.len());
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for BytesCodec {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        // the buffer holds exactly one message: take it whole (a split of tonic's buffer, no copy)
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::{poll_fn, ready, Ready};
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use tonic::codegen::{http, Body as _, Service};

    /// A unary method that answers its message reversed.
    struct Reverse;

    impl Service<tonic::Request<Bytes>> for Reverse {
        type Response = tonic::Response<Bytes>;
        type Error = Status;
        type Future = Ready<Result<Self::Response, Status>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Status>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, request: tonic::Request<Bytes>) -> Self::Future {
            let mut bytes = request.into_inner().to_vec();
            bytes.reverse();
            ready(Ok(tonic::Response::new(Bytes::from(bytes))))
        }
    }

    /// gRPC's framing of one message: no compression, big-endian length, the bytes.
    fn frame(payload: &[u8]) -> Vec<u8> {
        let mut framed = vec![0u8];
        framed.extend((payload.len() as u32).to_be_bytes());
        framed.extend(payload);
        framed
    }

    #[tokio::test]
    async fn a_message_crosses_tonics_framing_unchanged() {
        // an ASCII payload shorter than 128 bytes keeps the frame valid UTF-8 (a `String` body)
        let body = String::from_utf8(frame(b"shard message")).unwrap();
        let request = http::Request::builder()
            .method("POST")
            .uri("/tessera.transport.Transport/Call")
            .header("content-type", "application/grpc")
            .body(body)
            .unwrap();
        let response = tonic::server::Grpc::new(BytesCodec)
            .unary(Reverse, request)
            .await;
        assert_eq!(response.status(), 200);
        let mut body = response.into_body();
        let mut data = Vec::new();
        let mut grpc_status = None;
        while let Some(frame) = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            let frame = frame.unwrap();
            if let Some(trailers) = frame.trailers_ref() {
                grpc_status = trailers.get("grpc-status").cloned();
            } else if let Ok(chunk) = frame.into_data() {
                data.extend_from_slice(&chunk);
            }
        }
        assert_eq!(grpc_status.unwrap(), "0");
        assert_eq!(data, frame(b"egassem drahs"));
    }
}
