//! A streamed response's body: the lines a job sends as it runs (crate::stream), handed to
//! hyper as they come. Each line counts against the unread budget (crate::unread) when it is
//! handed over, as a whole response does; lines the job has queued and hyper has not yet
//! asked for are bounded by the job's own output caps (the policy's stdout and stderr limits,
//! and one record), as a record held for a slow client is.

use crate::unread::{ConnOut, Unread};
use bytes::Bytes;
use hyper::body::{Body, Frame};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::mpsc::UnboundedReceiver;

pub struct ChanBody {
    rx: UnboundedReceiver<Bytes>,
    meter: Option<(Arc<Unread>, Arc<ConnOut>)>,
}

impl ChanBody {
    pub fn new(rx: UnboundedReceiver<Bytes>) -> ChanBody {
        ChanBody { rx, meter: None }
    }

    /// Count each line against `unread` for the connection `out` as it is handed over.
    pub fn meter(&mut self, unread: Arc<Unread>, out: Arc<ConnOut>) {
        self.meter = Some((unread, out));
    }
}

impl Body for ChanBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(b)) => {
                if let Some((unread, out)) = &self.meter {
                    unread.produced(out, b.len());
                }
                Poll::Ready(Some(Ok(Frame::data(b))))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}
